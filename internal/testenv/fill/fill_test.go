package fill

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type node struct {
	Name     string            `json:"name"`
	Count    int64             `json:"count,omitempty"`
	Ratio    float64           `json:"ratio,omitempty"`
	On       *bool             `json:"on,omitempty"`
	At       time.Time         `json:"at"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Data     []byte            `json:"data,omitempty"`
	Any      any               `json:"any,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Children []*node           `json:"children,omitempty"`
	Embedded
}

type Embedded struct {
	Kind string
}

func TestValueSetsEveryField(t *testing.T) {
	n := Value[node]()
	v := reflect.ValueOf(n)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("field %s is zero", v.Type().Field(i).Name)
		}
	}
	if n.Name != "name" || n.Kind != "Kind" || n.Labels["key"] != "labels" || string(n.Raw) != `{"raw":"raw"}` || n.Any != "any" || !n.At.Equal(Time) {
		t.Errorf("values: %+v", n)
	}
	// A type inside itself is filled once more, then left empty.
	if len(n.Children) != 1 || n.Children[0].Name != "name" || n.Children[0].Children != nil {
		t.Errorf("children: %+v", n.Children)
	}
}
