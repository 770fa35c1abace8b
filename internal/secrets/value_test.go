package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestValueNeverLeaks(t *testing.T) {
	const plain = "hunter2-the-password"
	v := NewValue(plain)
	type wrapper struct {
		Name   string
		Secret Value
		Ptr    *Value
	}
	w := wrapper{Name: "db", Secret: v, Ptr: &v}

	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s", "%-8v"} {
		outs = append(outs, fmt.Sprintf(verb, v), fmt.Sprintf(verb, w), fmt.Sprintf(verb, []Value{v}), fmt.Sprintf(verb, map[string]Value{"k": v}))
	}
	outs = append(outs, fmt.Sprint(v), fmt.Sprintln(v, &v), v.String(), v.GoString())

	js, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(js))
	mk, _ := json.Marshal(map[Value]int{v: 1})
	outs = append(outs, string(mk))

	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		l := slog.New(h(&buf))
		l.Info("msg", "secret", v, "ptr", &v, "w", w, slog.Any("any", v), slog.Group("g", "s", v))
		outs = append(outs, buf.String())
	}

	for _, out := range outs {
		if strings.Contains(out, plain) || strings.Contains(out, fmt.Sprintf("%x", plain)) || strings.Contains(out, "104 117 110") {
			t.Errorf("leaked: %s", out)
		}
	}
	if got := fmt.Sprintf("%v", v); got != Redacted {
		t.Errorf("%%v = %q, want %q", got, Redacted)
	}
	if string(js) != `{"Name":"db","Secret":"***","Ptr":"***"}` {
		t.Errorf("JSON = %s", js)
	}
	if v.Reveal() != plain {
		t.Errorf("Reveal = %q", v.Reveal())
	}
}

func TestValueUnmarshalJSON(t *testing.T) {
	var in struct{ Secret Value }
	if err := json.Unmarshal([]byte(`{"Secret":"s3cr\u00e9t"}`), &in); err != nil {
		t.Fatal(err)
	}
	if in.Secret.Reveal() != "s3crét" {
		t.Errorf("Reveal = %q", in.Secret.Reveal())
	}
	if !in.Secret.Equal(NewValue("s3crét")) || in.Secret.Equal(NewValue("other")) {
		t.Error("Equal")
	}
	if err := json.Unmarshal([]byte(`{"Secret":12345}`), &in); err == nil || strings.Contains(err.Error(), "12345") {
		t.Errorf("number: err = %v, want an error without the value", err)
	}
	if !(Value{}).IsZero() || in.Secret.IsZero() {
		t.Error("IsZero")
	}
}
