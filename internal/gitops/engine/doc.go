// Package engine is the runtime's GitOps engine in Argo CD's role: it keeps Kubernetes clusters
// in the state Argo CD Applications in git describe.
//
// For each application (an app.Application plus its app.AppProject) the engine:
//
//   - refreshes: resolves the target revision in the shared git.Cache, renders the source with
//     render.Renderer (once per repository, commit and source options, shared by every app that
//     renders the same thing), prepares the objects for the destination (namespace, tracking
//     label freshet.dev/app), and compares each with its live object: the would-be object comes
//     from a server-side apply dry-run (field manager "freshet"), so server defaults raise no
//     diff; live objects come from shared informers, one per resource type and cluster,
//     filtered by the tracking label. A comparison is cached until the desired object or the
//     live object's content changes, so refreshing an unchanged app costs no API calls;
//   - assesses health (package health): Healthy, Progressing, Degraded, Suspended, Missing,
//     Unknown; the app is as healthy as its worst resource;
//   - syncs: PreSync hooks, then the Sync phase wave by wave (argocd.argoproj.io/sync-wave, then
//     Argo CD's kind order), pruning and applying, Sync hooks, and waiting for the wave to be
//     healthy before the next; PruneLast prunes; PostSync hooks; SyncFail hooks when it failed.
//     Helm hooks are mapped as Argo CD maps them. What the engine applied is recorded in an
//     inventory ConfigMap in the destination cluster, so prune deletes exactly what the app no
//     longer renders, also after a restart;
//   - automates: auto-sync of new revisions, self-heal of drift seen by the informers (with
//     exponential backoff and a per-window limit, so two writers cannot fight forever), retries
//     of failed syncs per syncPolicy.retry (temporary failures only), polling every
//     Options.PollInterval and Notify for push webhooks;
//   - keeps history (revision, commit, changed resources, result, duration; stored with the
//     inventory) for rollback, which switches automated sync off as Argo CD does;
//   - serves the resource tree (owner references) and per-resource diffs.
//
// Everything the engine learns is reported through Reporter, which the runtime forwards to
// the control plane. The engine imports nothing from the control plane.
package engine
