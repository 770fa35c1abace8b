import { Link, useLocation } from '../app/router';
import { EmptyState, listOf } from '../components/States';

export function NotFound() {
  const { pathname } = useLocation();
  // Under a list (/pipelines/x/y/z, /builds/1/x): the way back to it first.
  const back = listOf(pathname);
  return (
    <EmptyState
      title="No such page"
      action={
        <>
          {back && (
            <Link to={back.to} className="button button-primary" data-testid="back-to-list">
              Back to {back.label}
            </Link>
          )}{' '}
          <Link to="/" className="button">
            Go home
          </Link>
        </>
      }
    >
      Nothing lives at <code>{pathname}</code>.
    </EmptyState>
  );
}
