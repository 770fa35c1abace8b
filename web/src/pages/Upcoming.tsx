// Areas whose API has not landed in the control plane yet. They say so plainly: no sample
// data, no mock-ups that could be mistaken for a real runtime or build.
import { PageHeader } from '../components/PageHeader';
import { EmptyState } from '../components/States';

const areas = {
  applications: {
    title: 'Applications',
    what: 'Applications are Argo CD Applications synced from git by a runtime. This page will list them with health and sync status, and show each one’s resource tree, live-versus-desired diff and history.',
  },
} as const;

export default function Upcoming({ area }: { area: keyof typeof areas }) {
  const a = areas[area];
  return (
    <>
      <PageHeader title={a.title} />
      <EmptyState title={`${a.title} are not available in this version yet`}>
        <p>{a.what}</p>
        <p>The control plane does not serve this API yet, so there is nothing to show — nothing here is simulated.</p>
      </EmptyState>
    </>
  );
}
