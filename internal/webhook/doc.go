// Package webhook turns git providers' webhook deliveries into one normalized [Event] and decides
// whether a pipeline's git [Trigger] fires for it. It serves both halves of the product: CI
// triggers (internal/pipeline) and GitOps push notifications (internal/runtimes) import it, and
// neither imports the other for it.
//
// [Parse] takes what the HTTP handler received — the provider named by the route, the headers,
// the raw body and the trigger's secret — and verifies the delivery before it looks at the
// body: an HMAC-SHA256 signature for GitHub (X-Hub-Signature-256), Gitea (X-Gitea-Signature)
// and Bitbucket Cloud (X-Hub-Signature), a shared token for GitLab (X-Gitlab-Token, compared in
// constant time). A trigger without a secret is a misconfiguration and is refused unless the
// caller passes [AllowUnsigned]. Bodies are bounded ([DefaultMaxBodyBytes]; [ReadBody] reads a
// request body within that bound).
//
// [Verify] is the same check alone, for callers that keep the provider's payload as it is (the
// runtime's Argo Events git sources hand the body to Sensors unchanged).
//
// Events carry the provider's delivery id ([Event.DeliveryID]) so that a redelivered webhook
// creates no second build, and name themselves the way Codefresh triggers do
// ([Event.CodefreshName]: push.heads, push.tags, pullrequest.opened, release, …). The delivery
// id is not signed, so callers also remember a verified payload's identity ([Digest]) for
// [ReplayWindow]: a signed body replayed under another id is a duplicate too ([Recent] is the
// in-memory form, for actions whose repetition is harmless but costly).
//
// Every delivery not verified with the secret of the webhook it names gets one answer,
// [Unauthenticated], which depends on the provider in the URL only; a handler verifies
// deliveries to webhooks that do not exist with a [Decoy] secret, so that it does the same work.
//
// [Trigger] is the git trigger of a pipeline in the Codefresh shape (repo, events, branchRegex
// with branchRegexInput, pullRequestTargetBranchRegex, modifiedFilesGlob); [Trigger.Validate]
// names the bad field and [Match] says why a trigger does not fire.
//
// Errors wrap the errdefs kinds: a bad request is errdefs.ErrInvalid (an event Freshet does not
// build from is [ErrUnsupportedEvent], which the handler should acknowledge rather than fail), a
// bad or missing signature is errdefs.ErrUnauthenticated ([ErrSignature]), an oversized body is
// errdefs.ErrTooLarge, and a trigger without a secret is [ErrNoSecret], a server-side error.
//
// The package does no I/O beyond [ReadBody]. docs/webhooks.md is the user-facing description;
// keep it true when behaviour here changes.
package webhook
