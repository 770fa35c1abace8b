package rbac

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Attribute-based rules refine roles. A role is the coarse layer: it says which permissions a
// member may hold at most. Once an account has a rule for a kind of resource, that kind is
// governed: a member or viewer may act on a resource of the kind only when a rule lets them —
// a rule of theirs or of a team they belong to, naming the action, the kind and attributes the
// resource has. Admins are not bound by rules (they write them). Kinds no rule names stay
// governed by roles alone.

// Action is what a rule lets someone do.
type Action string

// Actions.
const (
	ActCreate    Action = "create"
	ActRead      Action = "read"
	ActUpdate    Action = "update"
	ActDelete    Action = "delete"
	ActRun       Action = "run"
	ActApprove   Action = "approve"
	ActSync      Action = "sync"
	ActTerminate Action = "terminate"
)

// Actions lists every action, in the order messages name them.
var Actions = []Action{ActCreate, ActRead, ActUpdate, ActDelete, ActRun, ActApprove, ActSync, ActTerminate}

// Kind is a kind of resource rules can govern.
type Kind string

// Kinds.
const (
	KindProjects     Kind = "projects"
	KindPipelines    Kind = "pipelines"
	KindBuilds       Kind = "builds"
	KindContexts     Kind = "contexts"
	KindRuntimes     Kind = "runtimes"
	KindClusters     Kind = "clusters"
	KindApplications Kind = "applications"
	KindGitSources   Kind = "gitsources"
	// KindWorkflows are a runtime's Argo Workflows (and their templates), operated through its
	// app-proxy and archived by the control plane.
	KindWorkflows Kind = "workflows"
)

// Kinds lists every kind, in the order messages name them.
var Kinds = []Kind{KindProjects, KindPipelines, KindBuilds, KindContexts, KindRuntimes, KindClusters, KindApplications, KindGitSources, KindWorkflows}

// coarse is the role permission each action on each kind needs. An action a kind does not
// list does not apply to it.
var coarse = map[Kind]map[Action]Permission{
	KindProjects:     {ActCreate: ManagePipelines, ActRead: ReadPipelines, ActUpdate: ManagePipelines, ActDelete: ManagePipelines},
	KindPipelines:    {ActCreate: ManagePipelines, ActRead: ReadPipelines, ActUpdate: ManagePipelines, ActDelete: ManagePipelines, ActRun: RunPipelines},
	KindBuilds:       {ActRead: ReadPipelines, ActRun: RunPipelines, ActApprove: ApproveBuilds, ActTerminate: RunPipelines},
	KindContexts:     {ActCreate: ManageContexts, ActRead: ReadContexts, ActUpdate: ManageContexts, ActDelete: ManageContexts},
	KindRuntimes:     {ActCreate: ManageRuntimes, ActRead: ReadRuntimes, ActUpdate: ManageRuntimes, ActDelete: ManageRuntimes},
	KindClusters:     {ActCreate: ManageRuntimes, ActRead: ReadRuntimes, ActDelete: ManageRuntimes},
	KindApplications: {ActCreate: ReadRuntimes, ActRead: ReadRuntimes, ActUpdate: ReadRuntimes, ActDelete: ReadRuntimes, ActSync: ReadRuntimes, ActTerminate: ReadRuntimes},
	KindGitSources:   {ActCreate: ReadRuntimes, ActRead: ReadRuntimes, ActUpdate: ReadRuntimes, ActDelete: ReadRuntimes},
	// As applications': the runtime lets members and admins operate (submit: create, retry:
	// run, stop and terminate: terminate, suspend and resume: update; a CronWorkflow's create,
	// delete, suspend and resume likewise), viewers read.
	KindWorkflows: {ActCreate: ReadRuntimes, ActRead: ReadRuntimes, ActUpdate: ReadRuntimes, ActDelete: ReadRuntimes, ActRun: ReadRuntimes, ActTerminate: ReadRuntimes},
}

// owned kinds have an owner team: a project's (its pipelines and builds inherit it) or a
// runtime's (its clusters, applications, git sources and workflows inherit it).
func (k Kind) owned() bool { return k != KindContexts }

// tagged kinds carry tags; gitops kinds carry runtime, cluster and namespace.
func (k Kind) tagged() bool { return k == KindProjects || k == KindPipelines || k == KindBuilds }
func (k Kind) gitops() bool {
	return k == KindRuntimes || k == KindClusters || k == KindApplications || k == KindGitSources || k == KindWorkflows
}

func joinNames[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// ParseAction validates an action named by a user, for field.
func ParseAction(field, s string) (Action, error) {
	if a := Action(s); slices.Contains(Actions, a) {
		return a, nil
	}
	return "", errdefs.Invalid(field, s, "is not an action: use one of "+joinNames(Actions))
}

// ParseKind validates a resource kind named by a user, for field.
func ParseKind(field, s string) (Kind, error) {
	if k := Kind(s); slices.Contains(Kinds, k) {
		return k, nil
	}
	return "", errdefs.Invalid(field, s, "is not a resource kind: use one of "+joinNames(Kinds))
}

// ActionsOn lists the actions that apply to kind k.
func ActionsOn(k Kind) []Action {
	var out []Action
	for _, a := range Actions {
		if _, ok := coarse[k][a]; ok {
			out = append(out, a)
		}
	}
	return out
}

// Attributes describe a resource to rules: tags on projects, pipelines and builds (a build's
// are its pipeline's); runtime, cluster and namespace on GitOps resources; the owner team on
// all but contexts (a project's, inherited by its pipelines and builds; a runtime's, inherited
// by its clusters, applications, git sources and workflows).
type Attributes struct {
	Tags      []string
	Runtime   string
	Cluster   string
	Namespace string
	// Project is an application's Argo CD project (spec.project) and App its name: the
	// attributes of rules derived from AppProject roles (applications only).
	Project   string
	App       string
	Owner     string // the owner team's ID; empty: no team owns it
	OwnerName string // the owner team's name, for messages (Explain fills it)
}

// OwnTeam is the owner attribute of a rule that matches resources owned by the rule's team, or
// for a user's rule by a team the user is in.
const OwnTeam = "own-team"

// Resource is what an action is on.
type Resource struct {
	Kind  Kind
	Name  string // for messages: project/pipeline, a build ID, a runtime's name
	Attrs Attributes
}

func (r Resource) String() string {
	if r.Name == "" {
		return string(r.Kind)
	}
	return string(r.Kind) + "/" + r.Name
}

// Rule lets a team or a user take an action on resources of a kind that have its attributes.
// Empty attributes match anything: a rule without attributes covers every resource of its kind.
type Rule struct {
	ID        string
	TeamID    string // the team the rule is for, or
	UserID    string // the user it is for
	Subject   string // how messages name the team or user
	Action    Action
	Kind      Kind
	Tags      []string // the resource has at least one of these tags
	Runtime   string
	Cluster   string
	Namespace string
	// Project is the Argo CD project an application must be in, and Apps globs (path.Match,
	// '*' any run of characters) of which its name must match one; ExceptApps globs its name
	// must match none of (an AppProject role's deny lines). Applications only.
	Project    string
	Apps       []string
	ExceptApps []string
	// Origin names where a derived rule comes from ("AppProject P of runtime R, role X"); such
	// a rule is not edited through the rules API and is replaced wholesale when its source is.
	Origin string
	// Owner is OwnTeam, or the ID of the team (of the rule's account) that must own the
	// resource; empty matches any owner or none. OwnerName names it in messages.
	Owner     string
	OwnerName string
}

// Validate checks r's action, kind and attributes, naming the bad field.
func (r Rule) Validate() error {
	if _, err := ParseKind("kind", string(r.Kind)); err != nil {
		return err
	}
	if _, err := ParseAction("action", string(r.Action)); err != nil {
		return err
	}
	if _, ok := coarse[r.Kind][r.Action]; !ok {
		return errdefs.Invalid("action", string(r.Action), fmt.Sprintf("does not apply to %s: use one of %s", r.Kind, joinNames(ActionsOn(r.Kind))))
	}
	if (r.TeamID == "") == (r.UserID == "") {
		return errdefs.Invalid("team", r.TeamID, "or user must be set, not both: a rule is for one team or one user")
	}
	if len(r.Tags) > 0 && !r.Kind.tagged() {
		return errdefs.Invalid("tags", strings.Join(r.Tags, ","), fmt.Sprintf("do not apply to %s: tags describe projects, pipelines and builds", r.Kind))
	}
	if len(r.Tags) > MaxRuleTags {
		return errdefs.Invalid("tags", fmt.Sprint(len(r.Tags)), fmt.Sprintf("are more than %d tags", MaxRuleTags))
	}
	for i, t := range r.Tags {
		if err := ValidateTag(fmt.Sprintf("tags[%d]", i), t); err != nil {
			return err
		}
	}
	if r.Owner != "" && !r.Kind.owned() {
		return errdefs.Invalid("owner", r.OwnerName, fmt.Sprintf("does not apply to %s: teams own projects (with their pipelines and builds) and runtimes (with their clusters, applications, gitsources and workflows)", r.Kind))
	}
	if r.Kind != KindApplications {
		for _, f := range []struct{ name, v string }{{"project", r.Project}, {"apps", strings.Join(r.Apps, ",")}, {"except-apps", strings.Join(r.ExceptApps, ",")}} {
			if f.v != "" {
				return errdefs.Invalid(f.name, f.v, fmt.Sprintf("does not apply to %s: project and application names describe applications", r.Kind))
			}
		}
	}
	for _, gs := range []struct {
		name  string
		globs []string
	}{{"apps", r.Apps}, {"except-apps", r.ExceptApps}} {
		for i, g := range gs.globs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return errdefs.Invalid(fmt.Sprintf("%s[%d]", gs.name, i), g, "is not a glob of application names (path.Match syntax: *, ?, [a-z])")
			}
		}
	}
	if !r.Kind.gitops() {
		for _, f := range []struct{ name, v string }{{"runtime", r.Runtime}, {"cluster", r.Cluster}, {"namespace", r.Namespace}} {
			if f.v != "" {
				return errdefs.Invalid(f.name, f.v, fmt.Sprintf("does not apply to %s: runtime, cluster and namespace describe runtimes, clusters, applications, gitsources and workflows", r.Kind))
			}
		}
	}
	return nil
}

// Bounds of tags.
const (
	MaxTagLen   = 63 // characters of one tag
	MaxRuleTags = 32 // tags one rule names
)

// ValidateTag checks one tag, for field.
func ValidateTag(field, t string) error {
	ok := t != "" && len(t) <= MaxTagLen
	for i := 0; ok && i < len(t); i++ {
		c := t[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_' || c == '.' || c == ':'))
	}
	if !ok {
		return errdefs.Invalid(field, t, fmt.Sprintf("is not a tag: use 1-%d letters, digits, '-', '_', '.' or ':', starting with a letter or digit", MaxTagLen))
	}
	return nil
}

// ownerOK reports whether r's owner attribute holds for a resource owned by team owner; teams
// are the teams of the user the rules bind (for a user's own-team rule).
func (r *Rule) ownerOK(owner string, teams map[string]bool) bool {
	switch {
	case r.Owner == "":
		return true
	case owner == "":
		return false
	case r.Owner != OwnTeam:
		return r.Owner == owner
	case r.TeamID != "":
		return r.TeamID == owner
	}
	return teams[owner]
}

// match reports whether r's attributes hold for res (its action and kind are not checked);
// it is Matches without the reason, for the path every request takes.
func (r *Rule) match(res Resource, teams map[string]bool) bool {
	if !r.ownerOK(res.Attrs.Owner, teams) {
		return false
	}
	if len(r.Tags) > 0 && !slices.ContainsFunc(r.Tags, func(t string) bool { return slices.Contains(res.Attrs.Tags, t) }) {
		return false
	}
	return (r.Runtime == "" || r.Runtime == res.Attrs.Runtime) && (r.Cluster == "" || r.Cluster == res.Attrs.Cluster) &&
		(r.Namespace == "" || r.Namespace == res.Attrs.Namespace) && r.appOK(res.Attrs) == ""
}

// appOK says why r's project and application-name attributes do not hold for a, or "".
func (r *Rule) appOK(a Attributes) string {
	if r.Project != "" && r.Project != a.Project {
		return fmt.Sprintf("is in Argo CD project %q, not %q", a.Project, r.Project)
	}
	if len(r.Apps) > 0 && !slices.ContainsFunc(r.Apps, func(g string) bool { return globMatch(g, a.App) }) {
		return "matches none of the application names " + strings.Join(r.Apps, ", ")
	}
	if i := slices.IndexFunc(r.ExceptApps, func(g string) bool { return globMatch(g, a.App) }); i >= 0 {
		return fmt.Sprintf("matches %s, which the rule excepts (a deny line)", r.ExceptApps[i])
	}
	return ""
}

func globMatch(g, name string) bool {
	ok, err := path.Match(g, name)
	return ok && err == nil
}

// Matches reports whether r's attributes hold for res (its action and kind are not checked)
// for a user in teams (team IDs), and when not, why.
func (r *Rule) Matches(res Resource, teams map[string]bool) (bool, string) {
	if r.match(res, teams) {
		return true, ""
	}
	if !r.ownerOK(res.Attrs.Owner, teams) {
		owned := "is owned by no team"
		if res.Attrs.Owner != "" {
			owned = "is owned by team " + ownerName(res.Attrs)
		}
		switch {
		case r.Owner != OwnTeam:
			return false, fmt.Sprintf("%s %s, not by team %s", res, owned, r.OwnerName)
		case r.TeamID != "":
			return false, fmt.Sprintf("%s %s, not by the rule's %s", res, owned, r.Subject)
		}
		return false, fmt.Sprintf("%s %s, not by a team the user is in", res, owned)
	}
	if len(r.Tags) > 0 && !slices.ContainsFunc(r.Tags, func(t string) bool { return slices.Contains(res.Attrs.Tags, t) }) {
		return false, fmt.Sprintf("%s has none of the tags %s", res, strings.Join(r.Tags, ", "))
	}
	for _, f := range []struct{ name, want, got string }{{"runtime", r.Runtime, res.Attrs.Runtime}, {"cluster", r.Cluster, res.Attrs.Cluster}, {"namespace", r.Namespace, res.Attrs.Namespace}} {
		if f.want != "" && f.want != f.got {
			return false, fmt.Sprintf("%s is in %s %q, not %q", res, f.name, f.got, f.want)
		}
	}
	if why := r.appOK(res.Attrs); why != "" {
		return false, fmt.Sprintf("%s %s", res, why)
	}
	return true, ""
}

// Describe is r in one line: "team dev may run pipelines tagged prod".
func (r *Rule) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s may %s %s", r.Subject, r.Action, r.Kind)
	if len(r.Tags) > 0 {
		fmt.Fprintf(&b, " tagged %s", strings.Join(r.Tags, " or "))
	}
	for _, f := range []struct{ name, v string }{{"runtime", r.Runtime}, {"cluster", r.Cluster}, {"namespace", r.Namespace}} {
		if f.v != "" {
			fmt.Fprintf(&b, " in %s %s", f.name, f.v)
		}
	}
	if r.Project != "" {
		fmt.Fprintf(&b, " in Argo CD project %s", r.Project)
	}
	if len(r.Apps) > 0 {
		fmt.Fprintf(&b, " named %s", strings.Join(r.Apps, " or "))
	}
	if len(r.ExceptApps) > 0 {
		fmt.Fprintf(&b, " except %s", strings.Join(r.ExceptApps, ", "))
	}
	switch {
	case r.Owner == OwnTeam && r.TeamID != "":
		b.WriteString(" owned by the team")
	case r.Owner == OwnTeam:
		b.WriteString(" owned by a team of theirs")
	case r.Owner != "":
		fmt.Fprintf(&b, " owned by team %s", r.OwnerName)
	}
	if r.Origin != "" {
		fmt.Fprintf(&b, " (derived from %s)", r.Origin)
	}
	return b.String()
}

func ownerName(a Attributes) string {
	if a.OwnerName != "" {
		return a.OwnerName
	}
	return a.Owner
}

// ownerWhy says why r's owner attribute holds for res, for Explain.
func (r *Rule) ownerWhy(res Resource) string {
	switch {
	case r.Owner == "":
		return ""
	case r.Owner != OwnTeam:
		return fmt.Sprintf("; %s is owned by team %s, the team the rule names", res, ownerName(res.Attrs))
	case r.TeamID != "":
		return fmt.Sprintf("; %s is owned by team %s, the rule's own team (owner: own-team)", res, ownerName(res.Attrs))
	}
	return fmt.Sprintf("; %s is owned by team %s, which the user is in (owner: own-team)", res, ownerName(res.Attrs))
}

// Rules are the rules that bind one user in one account: which kinds are governed there, and
// the rules for the user and their teams. A value is shared by every request of the user and
// never changed once built.
type Rules struct {
	governed map[Kind]bool
	byKey    map[ruleKey][]*Rule
	teams    map[string]bool // the user's teams, for their own-team rules
	byOwner  map[Kind]bool   // kinds some rule of the user matches by owner
}

type ruleKey struct {
	kind   Kind
	action Action
}

// NewRules builds the Rules of a user from the kinds governed in the account, the rules for the
// user or their teams, and the IDs of the teams the user is in.
func NewRules(governed []Kind, rules []*Rule, teams ...string) *Rules {
	rs := &Rules{governed: make(map[Kind]bool, len(governed)), byKey: make(map[ruleKey][]*Rule)}
	if len(teams) > 0 {
		rs.teams = make(map[string]bool, len(teams))
		for _, t := range teams {
			rs.teams[t] = true
		}
	}
	for _, k := range governed {
		rs.governed[k] = true
	}
	for _, r := range rules {
		k := ruleKey{r.Kind, r.Action}
		rs.byKey[k] = append(rs.byKey[k], r)
		if r.Owner != "" {
			if rs.byOwner == nil {
				rs.byOwner = map[Kind]bool{}
			}
			rs.byOwner[r.Kind] = true
		}
	}
	return rs
}

// Governed reports whether rules govern kind k in the account.
func (rs *Rules) Governed(k Kind) bool { return rs != nil && rs.governed[k] }

// Authorize returns nil if p may take action a on res: p's role holds the permission a needs on
// res's kind, and — for a kind rules govern, unless p is an admin — a rule lets p. Otherwise it
// returns an error wrapping errdefs.ErrForbidden that says which layer refused.
func Authorize(p Principal, a Action, res Resource) error {
	perm, ok := coarse[res.Kind][a]
	if !ok {
		return fmt.Errorf("action %s on %s: %w", a, res.Kind, errdefs.ErrForbidden)
	}
	if err := Allow(p, perm); err != nil {
		return err
	}
	if p.Role == Admin || !p.Rules.Governed(res.Kind) {
		return nil
	}
	for _, r := range p.Rules.byKey[ruleKey{res.Kind, a}] {
		if r.match(res, p.Rules.teams) {
			return nil
		}
	}
	return fmt.Errorf("no rule lets you %s %s (rules govern %s in this account; 'freshet authz explain' says why): %w", a, res, res.Kind, errdefs.ErrForbidden)
}

// Visible reports whether p may read res; lists keep only what it lets through.
func Visible(p Principal, res Resource) bool { return Authorize(p, ActRead, res) == nil }

// Decision is Explain's answer.
type Decision struct {
	Allowed    bool
	Permission Permission // the role permission the action needs
	Role       Role       // the caller's role
	NeedRole   Role       // the least role that holds Permission
	RoleOK     bool       // the role layer allows it
	Governed   bool       // rules govern the kind in the account
	Rule       *Rule      // the rule that allowed it, if one did
	Reasons    []string   // each step of the decision, in order
}

// Explain says whether p may take action a on res, and why, step by step. It decides as
// Authorize does.
func Explain(p Principal, a Action, res Resource) Decision {
	d := Decision{Role: p.Role}
	perm, ok := coarse[res.Kind][a]
	if !ok {
		d.Reasons = append(d.Reasons, fmt.Sprintf("%s does not apply to %s (it takes %s)", a, res.Kind, joinNames(ActionsOn(res.Kind))))
		return d
	}
	d.Permission, d.NeedRole = perm, minRole[perm]
	d.RoleOK = Allow(p, perm) == nil
	if !d.RoleOK {
		d.Reasons = append(d.Reasons, fmt.Sprintf("role: %s needs %s, which needs role %s or higher; the role is %s", a, perm, d.NeedRole, orNone(p.Role)))
		return d
	}
	d.Reasons = append(d.Reasons, fmt.Sprintf("role: %s needs %s, which role %s holds", a, perm, p.Role))
	d.Governed = p.Rules.Governed(res.Kind)
	switch {
	case p.Role == Admin:
		d.Allowed = true
		d.Reasons = append(d.Reasons, "rules: admins are not bound by rules")
		return d
	case !d.Governed:
		d.Allowed = true
		d.Reasons = append(d.Reasons, fmt.Sprintf("rules: no rule names %s in this account, so the role decides", res.Kind))
		return d
	}
	if res.Kind.owned() {
		if res.Attrs.Owner != "" {
			d.Reasons = append(d.Reasons, fmt.Sprintf("owner: %s is owned by team %s", res, ownerName(res.Attrs)))
		} else {
			d.Reasons = append(d.Reasons, fmt.Sprintf("owner: %s is owned by no team", res))
		}
	}
	cands := p.Rules.byKey[ruleKey{res.Kind, a}]
	if len(cands) == 0 {
		d.Reasons = append(d.Reasons, fmt.Sprintf("rules: rules govern %s, and none for this user or their teams lets them %s %s", res.Kind, a, res.Kind))
		return d
	}
	for _, r := range cands {
		if ok, why := r.Matches(res, p.Rules.teams); ok {
			d.Allowed, d.Rule = true, r
			d.Reasons = append(d.Reasons, fmt.Sprintf("rules: rule %s allows it (%s)%s", r.ID, r.Describe(), r.ownerWhy(res)))
			return d
		} else {
			d.Reasons = append(d.Reasons, fmt.Sprintf("rules: rule %s (%s) does not match: %s", r.ID, r.Describe(), why))
		}
	}
	d.Reasons = append(d.Reasons, "rules: no rule matches, so it is refused")
	return d
}

// Bound reports whether rules bind p on kind k: rules govern k in p's account and p is not an
// admin. Callers use it to skip reading attributes no rule will look at.
func (p Principal) Bound(k Kind) bool { return p.Role != Admin && p.Rules.Governed(k) }

// OwnerMatters reports whether a decision for p on kind k may turn on the resource's owner
// team: rules bind p on k and one of p's rules for k names an owner. Callers that must read the
// owner separately (it does not come with the row they hold) skip the read when it does not.
func (p Principal) OwnerMatters(k Kind) bool { return p.Bound(k) && p.Rules.byOwner[k] }
