// The application's problems (a ComparisonError, a missing cluster, an invalid spec, a failed
// sync) as a banner above its tabs, each with the runtime's reason: a state to fix, not one to
// wait out. Warnings stay in the Conditions tab.
import type { Condition } from '../api/apps';
import { Link, href, useLocation } from '../app/router';
import { problems } from '../lib/apps';

export function AppProblems({ conditions }: { conditions?: Condition[] }) {
  const { pathname } = useLocation();
  const list = problems(conditions);
  if (list.length === 0) return null;
  return (
    <div className="notice notice-error app-problems" role="status" data-testid="app-problems">
      <div>
        <strong>{list.length === 1 ? 'This application has a problem' : `This application has ${list.length} problems`}</strong>
        <ul className="plain-list">
          {list.map((c, i) => (
            <li key={i}>
              <code>{c.type}</code>: {c.message}
              {c.source?.file && (
                <span className="muted">
                  {' '}
                  ({c.source.file}
                  {c.source.line ? `:${c.source.line}` : ''})
                </span>
              )}
            </li>
          ))}
        </ul>
      </div>
      <Link to={href(pathname, { tab: 'conditions' })} className="button button-small">
        Conditions
      </Link>
    </div>
  );
}
