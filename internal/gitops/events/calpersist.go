package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// maxCatchupTicks bounds the missed ticks one start publishes: a calendar whose last kept tick
// is far back (and no maxDuration) resumes at the present after that many.
const maxCatchupTicks = 1000

// lastTickLayout is how Argo Events writes a tick's eventTime (Go's time.Time.String, without
// the monotonic clock reading).
const lastTickLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// tickStore keeps a calendar's last tick in a ConfigMap of the EventSource's namespace, under
// the key Argo Events uses ("<eventSource>.<event>"), as the tick's event data. It acts as the
// EventSource's service account, which needs get, patch (and, with createIfNotExist, create)
// on ConfigMaps.
type tickStore struct {
	cms    dynamic.ResourceInterface
	name   string
	key    string
	create bool
}

// last is the kept tick's time; false when none is kept (no ConfigMap, no key).
func (s *tickStore) last(ctx context.Context) (time.Time, bool, error) {
	u, err := s.cms.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read configmap %s: %w", s.name, err)
	}
	v, ok, _ := unstructured.NestedString(u.Object, "data", s.key)
	if !ok || v == "" {
		return time.Time{}, false, nil
	}
	t, err := parseLastTick(v)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("configmap %s key %s: %w", s.name, s.key, err)
	}
	return t, true, nil
}

// save keeps data (a tick's event data) as the last tick.
func (s *tickStore) save(ctx context.Context, data []byte) error {
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{s.key: string(data)}})
	_, err := s.cms.Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) && s.create {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": s.name}, "data": map[string]any{s.key: string(data)}}}
		_, err = s.cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) { // made meanwhile (another event sharing it)
			_, err = s.cms.Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		}
	}
	if err != nil {
		return fmt.Errorf("keep the last tick in configmap %s: %w", s.name, err)
	}
	return nil
}

// parseLastTick reads a kept tick (the ConfigMap's value, anyone with write access to the
// ConfigMap writes it): JSON whose eventTime is a time as Argo Events writes it.
func parseLastTick(v string) (time.Time, error) {
	var d struct {
		EventTime string `json:"eventTime"`
	}
	if err := json.Unmarshal([]byte(v), &d); err != nil {
		return time.Time{}, fmt.Errorf("the last tick is not JSON: %w", err)
	}
	s, _, _ := strings.Cut(d.EventTime, " m=")
	t, err := time.Parse(lastTickLayout, s)
	if err != nil {
		return time.Time{}, errors.New("the last tick's eventTime is not a time as '" + lastTickLayout + "'")
	}
	return t, nil
}

// tickStoreFor is the store of calendar cr of EventSource ns/source; nil when it keeps nothing.
func (c *Controller) tickStoreFor(ns, source string, cr calendarRun) (*tickStore, error) {
	if cr.cal.configMap == "" {
		return nil, nil
	}
	d, err := c.clientAs(ns, cr.sa)
	if err != nil {
		return nil, err
	}
	return &tickStore{cms: d.Resource(configMapsGVR).Namespace(ns), name: cr.cal.configMap, key: source + "." + cr.event,
		create: cr.cal.create}, nil
}

// catchupFrom is where calendar cr starts at now: the kept tick when catching up (at most
// maxDuration back), else now.
func (c *Controller) catchupFrom(ctx context.Context, st *tickStore, cr calendarRun, now time.Time, logName string) time.Time {
	if st == nil || !cr.cal.catchup {
		return now
	}
	last, ok, err := st.last(ctx)
	if err != nil {
		c.log.Warn("calendar catch-up skipped", logKey, logName, logErr, err)
		return now
	}
	if !ok || !last.Before(now) {
		return now
	}
	if m := cr.cal.maxCatchup; m > 0 && now.Sub(last) > m {
		last = now.Add(-m)
	}
	c.log.Info("calendar catching up", logKey, logName, "since", last)
	return last.In(cr.cal.loc)
}
