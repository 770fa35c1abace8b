import { Link, useLocation } from '../app/router';
import { EmptyState } from '../components/States';

export function NotFound() {
  const { pathname } = useLocation();
  return (
    <EmptyState title="No such page" action={<Link to="/" className="button">Go home</Link>}>
      Nothing lives at <code>{pathname}</code>.
    </EmptyState>
  );
}
