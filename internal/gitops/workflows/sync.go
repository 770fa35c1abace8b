package workflows

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Synchronization is Argo's synchronization: the mutexes and semaphores a whole Workflow
// (spec.synchronization) or one template's node holds while it runs. mutex and semaphore are
// Argo's older single forms, mutexes and semaphores its lists; all of them are held together.
type Synchronization struct {
	Mutex      *Mutex          `json:"mutex,omitempty"`
	Semaphore  *SemaphoreRef   `json:"semaphore,omitempty"`
	Mutexes    []*Mutex        `json:"mutexes,omitempty"`
	Semaphores []*SemaphoreRef `json:"semaphores,omitempty"`
}

// Mutex is a lock one holder at a time may hold, named in a namespace (the Workflow's unless
// given).
type Mutex struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Database (Argo's database-backed locks) is refused by name.
	Database bool `json:"database,omitempty"`
}

// SemaphoreRef is a lock as many holders may hold as a ConfigMap key says.
type SemaphoreRef struct {
	ConfigMapKeyRef *corev1.ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
	Namespace       string                       `json:"namespace,omitempty"`
	// Database (Argo's database-backed locks) is refused by name.
	Database *struct {
		Key string `json:"key"`
	} `json:"database,omitempty"`
}

// SynchronizationStatus is status.synchronization, as Argo writes it: the locks this
// Workflow's holders hold, and those they wait for with who holds them.
type SynchronizationStatus struct {
	Semaphore *SemaphoreStatus `json:"semaphore,omitempty"`
	Mutex     *MutexStatus     `json:"mutex,omitempty"`
}

// SemaphoreStatus lists semaphores held and waited for.
type SemaphoreStatus struct {
	Holding []SemaphoreHolding `json:"holding,omitempty"`
	Waiting []SemaphoreHolding `json:"waiting,omitempty"`
}

// SemaphoreHolding is one semaphore's key and holders (in Holding: this Workflow's; in
// Waiting: the current holders).
type SemaphoreHolding struct {
	Semaphore string   `json:"semaphore,omitempty"`
	Holders   []string `json:"holders,omitempty"`
}

// MutexStatus lists mutexes held and waited for.
type MutexStatus struct {
	Holding []MutexHolding `json:"holding,omitempty"`
	Waiting []MutexHolding `json:"waiting,omitempty"`
}

// MutexHolding is one mutex's key and its holder (in Waiting: the holder waited for).
type MutexHolding struct {
	Mutex  string `json:"mutex,omitempty"`
	Holder string `json:"holder,omitempty"`
}

// NodeSynchronizationStatus is a node's synchronizationStatus: the lock it waits for.
type NodeSynchronizationStatus struct {
	Waiting string `json:"waiting,omitempty"`
}

// Lock kinds, as Argo spells them in lock keys: "NS/Mutex/NAME", "NS/ConfigMap/NAME/KEY".
const (
	lockMutex     = "Mutex"
	lockConfigMap = "ConfigMap"
)

// msgLockFailed is Argo's message when a lock cannot be taken at all (its definition is wrong).
const msgLockFailed = "Failed to acquire the synchronization lock. "

// syncRecheck is how often a holder that waits tries again without being told (a semaphore's
// ConfigMap may have raised its limit); a release wakes waiters at once.
const syncRecheck = 10 * time.Second

// limitTTL is how long a semaphore's limit is used before its ConfigMap is read again.
const limitTTL = 5 * time.Second

// maxLocks bounds the locks one synchronization names.
const maxLocks = 20

// errLockConfig is a permanent error of a lock's definition (its ConfigMap or key missing, a
// limit that is not a number): the holder fails, as in Argo.
var errLockConfig = errors.New("synchronization")

// lockRef is one lock a synchronization names.
type lockRef struct {
	key                 string
	kind                string
	namespace, name, cm string // cm: the ConfigMap key of a semaphore
}

// lockRefs lists the locks s names, each once, namespaces defaulting to ns.
func lockRefs(s *Synchronization, ns string) []lockRef {
	var out []lockRef
	add := func(r lockRef) {
		if !slices.ContainsFunc(out, func(x lockRef) bool { return x.key == r.key }) {
			out = append(out, r)
		}
	}
	mutex := func(m *Mutex) {
		if m == nil {
			return
		}
		n := m.Namespace
		if n == "" {
			n = ns
		}
		add(lockRef{key: n + "/" + lockMutex + "/" + m.Name, kind: lockMutex, namespace: n, name: m.Name})
	}
	sem := func(s *SemaphoreRef) {
		if s == nil || s.ConfigMapKeyRef == nil {
			return
		}
		n := s.Namespace
		if n == "" {
			n = ns
		}
		add(lockRef{key: n + "/" + lockConfigMap + "/" + s.ConfigMapKeyRef.Name + "/" + s.ConfigMapKeyRef.Key, kind: lockConfigMap,
			namespace: n, name: s.ConfigMapKeyRef.Name, cm: s.ConfigMapKeyRef.Key})
	}
	mutex(s.Mutex)
	for _, m := range s.Mutexes {
		mutex(m)
	}
	sem(s.Semaphore)
	for _, x := range s.Semaphores {
		sem(x)
	}
	return out
}

// parseLockKey reads a lock key back ("NS/Mutex/NAME" or "NS/ConfigMap/NAME/KEY").
func parseLockKey(key string) (lockRef, bool) {
	parts := strings.Split(key, "/")
	for _, p := range parts {
		if p == "" {
			return lockRef{}, false
		}
	}
	switch {
	case len(parts) == 3 && parts[1] == lockMutex:
		return lockRef{key: key, kind: lockMutex, namespace: parts[0], name: parts[2]}, true
	case len(parts) == 4 && parts[1] == lockConfigMap:
		return lockRef{key: key, kind: lockConfigMap, namespace: parts[0], name: parts[2], cm: parts[3]}, true
	}
	return lockRef{}, false
}

// holderKey is Argo's: "NS/WORKFLOW" for the whole run, "NS/WORKFLOW/NODEID" for a node.
func holderKey(ns, wf, nodeID string) string {
	if nodeID == "" {
		return ns + "/" + wf
	}
	return ns + "/" + wf + "/" + nodeID
}

// workflowOfHolder is the "NS/WORKFLOW" of a holder key.
func workflowOfHolder(h string) string {
	i := strings.Index(h, "/")
	if i < 0 {
		return h
	}
	if j := strings.Index(h[i+1:], "/"); j >= 0 {
		return h[:i+1+j]
	}
	return h
}

// hold is one holder holding one lock.
type hold struct{ lock, holder string }

// holdsFromStatus reads the holds a Workflow's status records (at a controller's start, to
// rebuild the locks). Only holders of this Workflow count (a status cannot claim another's),
// only well-formed lock keys, and at most maxNodes of them.
func holdsFromStatus(ns, name string, st *SynchronizationStatus) []hold {
	if st == nil {
		return nil
	}
	wf := holderKey(ns, name, "")
	var out []hold
	add := func(lock, holder string) {
		if len(out) >= maxNodes {
			return
		}
		if _, ok := parseLockKey(lock); !ok {
			return
		}
		if holder != wf && (!strings.HasPrefix(holder, wf+"/") || strings.Contains(holder[len(wf)+1:], "/") || len(holder) == len(wf)+1) {
			return
		}
		h := hold{lock, holder}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if m := st.Mutex; m != nil {
		for _, x := range m.Holding {
			add(x.Mutex, x.Holder)
		}
	}
	if s := st.Semaphore; s != nil {
		for _, x := range s.Holding {
			for _, h := range x.Holders {
				add(x.Semaphore, h)
			}
		}
	}
	return out
}

// lockManager holds the controller's locks in memory. The Workflows' statuses are the record:
// a hold is written in its holder's status, and the manager is rebuilt from them at start.
type lockManager struct {
	limit  func(ctx context.Context, ns, name, key string) (int, error)
	notify func(wfKey string) // a waiter of a lock that freed (nil: none)
	now    func() time.Time

	mu    sync.Mutex
	locks map[string]*lockState
}

type lockState struct {
	ref     lockRef
	limit   int
	limitAt time.Time // zero: not read yet (a mutex's is 1 always)
	holders []string
	waiting []waiter // in order: priority (higher first), created, then holder
}

type waiter struct {
	holder   string
	priority int32
	created  time.Time
}

func newLockManager(limit func(ctx context.Context, ns, name, key string) (int, error), notify func(string), now func() time.Time) *lockManager {
	if now == nil {
		now = time.Now
	}
	return &lockManager{limit: limit, notify: notify, now: now, locks: map[string]*lockState{}}
}

func (m *lockManager) state(r lockRef) *lockState {
	s := m.locks[r.key]
	if s == nil {
		s = &lockState{ref: r}
		if r.kind == lockMutex {
			s.limit, s.limitAt = 1, time.Unix(1<<40, 0)
		}
		m.locks[r.key] = s
	}
	return s
}

// refreshLimits reads the limits of the semaphores of refs not read within limitTTL. An error
// wrapping errLockConfig is permanent.
func (m *lockManager) refreshLimits(ctx context.Context, refs []lockRef) error {
	for _, r := range refs {
		if r.kind != lockConfigMap {
			continue
		}
		m.mu.Lock()
		s := m.state(r)
		fresh := !s.limitAt.IsZero() && m.now().Sub(s.limitAt) < limitTTL
		m.mu.Unlock()
		if fresh {
			continue
		}
		n, err := m.limit(ctx, r.namespace, r.name, r.cm)
		if err != nil {
			return err
		}
		m.mu.Lock()
		raised := n > s.limit && !s.limitAt.IsZero()
		s.limit, s.limitAt = n, m.now()
		var wake []string
		if raised {
			for _, w := range s.waiting {
				wake = append(wake, workflowOfHolder(w.holder))
			}
		}
		m.mu.Unlock()
		m.wake(wake)
	}
	return nil
}

func (m *lockManager) wake(wfs []string) {
	if m.notify == nil {
		return
	}
	for _, w := range wfs {
		m.notify(w)
	}
}

// tryAcquire takes every lock of refs for holder, or none: when one cannot be taken (full, or
// others wait before the holder) the holder waits in that lock's queue, and the key of that
// lock and Argo's message are returned. Waiters are served as Argo serves them: the Workflow's
// spec.priority, higher first, then the oldest Workflow.
func (m *lockManager) tryAcquire(holder string, priority int32, created time.Time, refs []lockRef) (bool, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	me := waiter{holder, priority, created}
	blocked := -1
	for i, r := range refs {
		s := m.state(r)
		if slices.Contains(s.holders, holder) {
			continue
		}
		// A Workflow whose priority changed takes its new place.
		s.waiting = slices.DeleteFunc(s.waiting, func(w waiter) bool { return w.holder == holder && w != me })
		free := s.limit - len(s.holders)
		pos := slices.IndexFunc(s.waiting, func(w waiter) bool { return w.holder == holder })
		if pos < 0 {
			pos = 0
			for pos < len(s.waiting) && s.waiting[pos].before(me) {
				pos++
			}
		}
		if free <= 0 || pos >= free {
			blocked = i
			break
		}
	}
	if blocked < 0 {
		for _, r := range refs {
			s := m.locks[r.key]
			if !slices.Contains(s.holders, holder) {
				s.holders = append(s.holders, holder)
			}
			s.removeWaiter(holder)
		}
		return true, "", ""
	}
	r := refs[blocked]
	s := m.locks[r.key]
	if !slices.ContainsFunc(s.waiting, func(w waiter) bool { return w.holder == holder }) {
		i := 0
		for i < len(s.waiting) && s.waiting[i].before(me) {
			i++
		}
		s.waiting = slices.Insert(s.waiting, i, me)
	}
	for i, o := range refs {
		if i != blocked {
			m.locks[o.key].removeWaiter(holder) // waits in one queue only
		}
	}
	avail := max(s.limit-len(s.holders), 0)
	return false, r.key, fmt.Sprintf("Waiting for %s lock. Lock status: %d/%d", r.key, avail, s.limit)
}

// before reports whether w is served before o: higher priority, then older, then by name.
func (w waiter) before(o waiter) bool {
	switch {
	case w.priority != o.priority:
		return w.priority > o.priority
	case !w.created.Equal(o.created):
		return w.created.Before(o.created)
	}
	return w.holder < o.holder
}

func (s *lockState) removeWaiter(holder string) {
	s.waiting = slices.DeleteFunc(s.waiting, func(w waiter) bool { return w.holder == holder })
}

// reacquire records a hold read from a status (at start): no limit applies, so that the
// holds recorded are the holds kept — a limit lowered since makes new holders wait.
func (m *lockManager) reacquire(h hold) {
	r, ok := parseLockKey(h.lock)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.state(r)
	if !slices.Contains(s.holders, h.holder) {
		s.holders = append(s.holders, h.holder)
	}
}

// release lets holder go of every lock at once (its node ended: its pod is done, so a
// status write that fails after this cannot leave two holders running).
func (m *lockManager) release(holder string) {
	m.mu.Lock()
	var wake []string
	for _, s := range m.locks {
		n := len(s.holders)
		s.holders = slices.DeleteFunc(s.holders, func(h string) bool { return h == holder })
		if len(s.holders) < n {
			for _, w := range s.waiting {
				wake = append(wake, workflowOfHolder(w.holder))
			}
		}
	}
	m.mu.Unlock()
	m.wake(wake)
}

// holdsOf lists the holds of Workflow wfKey ("NS/NAME"), sorted.
func (m *lockManager) holdsOf(wfKey string) []hold {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []hold
	for k, s := range m.locks {
		for _, h := range s.holders {
			if workflowOfHolder(h) == wfKey {
				out = append(out, hold{k, h})
			}
		}
	}
	slices.SortFunc(out, func(a, b hold) int { return strings.Compare(a.lock+" "+a.holder, b.lock+" "+b.holder) })
	return out
}

// holders lists a lock's holders.
func (m *lockManager) holders(lock string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.locks[lock]; s != nil {
		return slices.Clone(s.holders)
	}
	return nil
}

// commit applies what one reconcile of Workflow wfKey decided, once its status is written:
// the holds released go, and of its waiters only those still waiting stay. all releases
// everything the Workflow holds and waits for (it finished or is gone).
func (m *lockManager) commit(wfKey string, release []hold, waiting map[string]string, all bool) {
	m.mu.Lock()
	var wake []string
	for k, s := range m.locks {
		n := len(s.holders)
		s.holders = slices.DeleteFunc(s.holders, func(h string) bool {
			return workflowOfHolder(h) == wfKey && (all || slices.Contains(release, hold{k, h}))
		})
		s.waiting = slices.DeleteFunc(s.waiting, func(w waiter) bool {
			return workflowOfHolder(w.holder) == wfKey && (all || waiting[w.holder] != k)
		})
		if len(s.holders) < n {
			for _, w := range s.waiting {
				wake = append(wake, workflowOfHolder(w.holder))
			}
		}
		if len(s.holders) == 0 && len(s.waiting) == 0 && (s.ref.kind == lockMutex || m.now().Sub(s.limitAt) >= limitTTL) {
			delete(m.locks, k) // a semaphore's limit read just now is kept for the holders it lets in
		}
	}
	m.mu.Unlock()
	m.wake(wake)
}

// syncState is what one operation did with locks.
type syncState struct {
	waiting map[string]string // holder → the lock it waits for, this pass
	release []hold            // holds to release once the status is written
	all     bool              // the workflow finished: release everything
}

func (o *operation) wfKey() string { return holderKey(o.wf.Namespace, o.wf.Name, "") }

// acquire takes the locks s names for holder; a permanent error (a semaphore's ConfigMap) is
// returned, a temporary one is left in o.err.
func (o *operation) acquire(holder string, s *Synchronization) (ok bool, lock, msg string, err error) {
	refs := lockRefs(s, o.wf.Namespace)
	for _, r := range refs {
		if p, ok := parseLockKey(r.key); !ok || p != r || !lockNameRe.MatchString(r.name) || !volumeNameRe.MatchString(r.namespace) || (r.kind == lockConfigMap && !lockNameRe.MatchString(r.cm)) {
			return false, "", "", fmt.Errorf("%w: lock %q: a name, namespace or key is not valid once substituted", errLockConfig, r.key)
		}
	}
	if err := o.locks.refreshLimits(o.ctx, refs); err != nil {
		if errors.Is(err, errLockConfig) {
			return false, "", "", err
		}
		o.err = err
		return false, "", "", nil
	}
	var priority int32
	if p := o.wf.Spec.Priority; p != nil {
		priority = *p
	}
	ok, lock, msg = o.locks.tryAcquire(holder, priority, o.wf.CreationTimestamp.Time, refs)
	if !ok {
		o.sync.waiting[holder] = lock
		o.after(syncRecheck)
	}
	return ok, lock, msg, nil
}

// syncNode holds a node of a template with synchronization back until its locks are taken:
// it returns the node (Pending, with Argo's message) and true while it waits. A node that
// waited and now holds its locks is started afresh by its template's kind.
func (o *operation) syncNode(inv invocation, t *Template, inputs *Inputs) (*NodeStatus, bool) {
	id := nodeID(o.wf.Name, inv.name)
	n := o.nodes[id]
	if n != nil && n.SynchronizationStatus == nil {
		return n, false // it took its locks when it started
	}
	if o.stopping != "" || (o.wf.Spec.Suspend != nil && *o.wf.Spec.Suspend) {
		if n != nil && o.stopping != "" {
			n.SynchronizationStatus = nil
			o.finish(n, NodeFailed, o.stopping)
			return n, true
		}
		return n, true // nothing starts while the workflow is suspended
	}
	ok, lock, msg, err := o.acquire(holderKey(o.wf.Namespace, o.wf.Name, id), t.Synchronization)
	if err != nil {
		if n != nil {
			n.SynchronizationStatus = nil
		}
		return o.errorNode(inv, fmt.Errorf("%s%v", msgLockFailed, err)), true
	}
	if o.err != nil && !ok {
		return n, true
	}
	if !ok {
		if n == nil {
			n = o.init(inv, nodeTypeOf(t), NodePending, t.Name)
			n.Inputs = inputs
		}
		n.Message, n.SynchronizationStatus = msg, &NodeSynchronizationStatus{Waiting: lock}
		return n, true
	}
	if n != nil {
		delete(o.nodes, id) // it waited: its kind starts it now
	}
	return nil, false
}

func nodeTypeOf(t *Template) NodeType {
	switch {
	case t.Steps != nil:
		return NodeTypeSteps
	case t.DAG != nil:
		return NodeTypeDAG
	case t.Suspend != nil:
		return NodeTypeSuspend
	}
	return NodeTypePod
}

// syncStatus ends an operation's use of locks: the holds of nodes that ended (or are gone) are
// released, a finished workflow releases all, and status.synchronization says what is held and
// waited for, as Argo writes it.
func (o *operation) syncStatus(st *WorkflowStatus) {
	wf := o.wfKey()
	if st.Phase.Completed() {
		o.sync.all = true
		st.Synchronization = nil
		return
	}
	var keep []hold
	for _, h := range o.locks.holdsOf(wf) {
		if h.holder != wf {
			id := h.holder[len(wf)+1:]
			if n := o.nodes[id]; n == nil || n.Phase.Fulfilled() || n.SynchronizationStatus != nil {
				o.sync.release = append(o.sync.release, h)
				continue
			}
		} else if o.spec.Synchronization == nil {
			o.sync.release = append(o.sync.release, h)
			continue
		}
		keep = append(keep, h)
	}
	var out SynchronizationStatus
	sem := map[string]int{}
	for _, h := range keep {
		if r, _ := parseLockKey(h.lock); r.kind == lockMutex {
			if out.Mutex == nil {
				out.Mutex = &MutexStatus{}
			}
			out.Mutex.Holding = append(out.Mutex.Holding, MutexHolding{Mutex: h.lock, Holder: h.holder})
			continue
		}
		if out.Semaphore == nil {
			out.Semaphore = &SemaphoreStatus{}
		}
		i, ok := sem[h.lock]
		if !ok {
			i = len(out.Semaphore.Holding)
			sem[h.lock] = i
			out.Semaphore.Holding = append(out.Semaphore.Holding, SemaphoreHolding{Semaphore: h.lock})
		}
		out.Semaphore.Holding[i].Holders = append(out.Semaphore.Holding[i].Holders, h.holder)
	}
	waits := make([]string, 0, len(o.sync.waiting))
	for holder := range o.sync.waiting {
		waits = append(waits, holder)
	}
	slices.Sort(waits)
	seen := map[string]bool{}
	for _, holder := range waits {
		lock := o.sync.waiting[holder]
		if seen[lock] {
			continue
		}
		seen[lock] = true
		holders := o.locks.holders(lock)
		if r, _ := parseLockKey(lock); r.kind == lockMutex {
			if out.Mutex == nil {
				out.Mutex = &MutexStatus{}
			}
			cur := ""
			if len(holders) > 0 {
				cur = holders[0]
			}
			out.Mutex.Waiting = append(out.Mutex.Waiting, MutexHolding{Mutex: lock, Holder: cur})
			continue
		}
		if out.Semaphore == nil {
			out.Semaphore = &SemaphoreStatus{}
		}
		out.Semaphore.Waiting = append(out.Semaphore.Waiting, SemaphoreHolding{Semaphore: lock, Holders: holders})
	}
	st.Synchronization = nil
	if out.Mutex != nil || out.Semaphore != nil {
		st.Synchronization = &out
	}
}

// semaphoreLimitOf reads a semaphore's limit from its ConfigMap's data.
func semaphoreLimitOf(cm *corev1.ConfigMap, ns, name, key string) (int, error) {
	v, ok := cm.Data[key]
	if !ok {
		return 0, fmt.Errorf("%w: ConfigMap %s/%s has no key %q (the semaphore's limit)", errLockConfig, ns, name, key)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: ConfigMap %s/%s key %q is %q: a semaphore's limit must be a whole number, 0 or more", errLockConfig, ns, name, key, cut(v, 40))
	}
	return n, nil
}

// lockNameRe is a mutex's name or a semaphore's ConfigMap key as a lock key may hold them.
var lockNameRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,253}$`)

// checkSync checks a synchronization (spec's or a template's) as `argo lint` would, naming
// the field; names holding {{…}} are checked once substituted.
func checkSync(s *Synchronization, f string) error {
	if s == nil {
		return nil
	}
	mutexes := append([]*Mutex{}, s.Mutexes...)
	sems := append([]*SemaphoreRef{}, s.Semaphores...)
	if len(mutexes)+len(sems) > maxLocks {
		return errdefs.Invalid(f, strconv.Itoa(len(mutexes)+len(sems)), fmt.Sprintf("names more than %d locks", maxLocks))
	}
	check := func(field, v, what string) error {
		if strings.Contains(v, "{{") {
			return nil
		}
		if !lockNameRe.MatchString(v) {
			return errdefs.Invalid(field, v, "must be "+what+": 1-253 letters, digits, '.', '-' or '_'")
		}
		return nil
	}
	ns := func(field, v string) error {
		if v != "" && !strings.Contains(v, "{{") && !volumeNameRe.MatchString(v) {
			return errdefs.Invalid(field, v, "must be a namespace's name")
		}
		return nil
	}
	mutex := func(m *Mutex, field string) error {
		switch {
		case m == nil:
			return errdefs.Invalid(field, "null", "must be a mutex")
		case m.Database:
			return notYet(field+".database", "database-backed locks")
		}
		if err := check(field+".name", m.Name, "the mutex's name"); err != nil {
			return err
		}
		return ns(field+".namespace", m.Namespace)
	}
	sem := func(x *SemaphoreRef, field string) error {
		switch {
		case x == nil:
			return errdefs.Invalid(field, "null", "must be a semaphore")
		case x.Database != nil:
			return notYet(field+".database", "database-backed locks")
		case x.ConfigMapKeyRef == nil:
			return errdefs.Invalid(field+".configMapKeyRef", "", "is required: the ConfigMap key holding the semaphore's limit")
		}
		if err := check(field+".configMapKeyRef.name", x.ConfigMapKeyRef.Name, "a ConfigMap's name"); err != nil {
			return err
		}
		if err := check(field+".configMapKeyRef.key", x.ConfigMapKeyRef.Key, "a ConfigMap key"); err != nil {
			return err
		}
		return ns(field+".namespace", x.Namespace)
	}
	if s.Mutex != nil {
		if err := mutex(s.Mutex, f+".mutex"); err != nil {
			return err
		}
	}
	for i, m := range mutexes {
		if err := mutex(m, fmt.Sprintf("%s.mutexes[%d]", f, i)); err != nil {
			return err
		}
	}
	if s.Semaphore != nil {
		if err := sem(s.Semaphore, f+".semaphore"); err != nil {
			return err
		}
	}
	for i, x := range sems {
		if err := sem(x, fmt.Sprintf("%s.semaphores[%d]", f, i)); err != nil {
			return err
		}
	}
	if s.Mutex == nil && s.Semaphore == nil && len(mutexes) == 0 && len(sems) == 0 {
		return errdefs.Invalid(f, "", "names no mutex or semaphore (mutex, semaphore, mutexes, semaphores)")
	}
	return nil
}
