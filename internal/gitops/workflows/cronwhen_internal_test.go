package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// spec.when as Argo writes it (an expression tag) and bare, over the cronworkflow variables
// with Argo's own cases (now() - lastScheduledTime); a bad one is refused naming spec.when.
func TestCronWhen(t *testing.T) {
	ago := time.Now().Add(-30 * time.Minute)
	cw := &CronWorkflow{}
	cw.Name = "nightly"
	for _, tc := range []struct {
		when string
		last *time.Time
		want bool
	}{
		{"{{= cronworkflow.lastScheduledTime == nil || ( (now() - cronworkflow.lastScheduledTime).Seconds() > 30) }}", nil, true},
		{"{{= cronworkflow.lastScheduledTime == nil || ( (now() - cronworkflow.lastScheduledTime).Seconds() > 30) }}", &ago, true},
		{"{{= cronworkflow.lastScheduledTime != nil }}", &ago, true},
		{"{{= cronworkflow.lastScheduledTime == nil }}", nil, true},
		{"{{= (now() - cronworkflow.lastScheduledTime).Minutes() >= 30 }}", &ago, true},
		{"{{= (now() - cronworkflow.lastScheduledTime).Minutes() <  20 }}", &ago, false},
		{"cronworkflow.succeeded < 3 && cronworkflow.name == 'nightly'", nil, true},
		{"{{= cronworkflow.failed > 0 }} || {{= cronworkflow.succeeded >= 2 }}", nil, true},
		{"", nil, true},
	} {
		if err := checkCronWhen(tc.when); err != nil {
			t.Errorf("%q: refused: %v", tc.when, err)
			continue
		}
		cw.Spec.When = tc.when
		got, err := whenHolds(cw, 2, 0, tc.last)
		if err != nil || got != tc.want {
			t.Errorf("%q (last %v): %v, %v; want %v", tc.when, tc.last, got, err, tc.want)
		}
	}
	for when, want := range map[string]string{
		"{{= cronworkflow.succeeded > }}":                           "does not compile",
		"{{= cronworkflow.name }}":                                  "boolean",
		"cronworkflow.succeded < 1":                                 "names cronworkflow.succeded",
		"{{cronworkflow.name}} == 'x'":                              "not an expression tag",
		"{{= cronworkflow.succeeded > 1":                            "not closed",
		"{{=  }}":                                                   "does not compile",
		"{{= workflow.status == 'Succeeded' }}":                     "does not compile",
		strings.Repeat("cronworkflow.failed > 1 || ", 200) + "true": "longer than",
	} {
		err := checkCronWhen(when)
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != fieldWhen || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60q: %v; want spec.when … %s", when, err, want)
		}
	}
	// One that fails only when it runs is an error then, naming the field.
	cw.Spec.When = "cronworkflow.labels.missing > 1"
	if err := checkCronWhen(cw.Spec.When); err != nil {
		t.Fatalf("refused at lint: %v", err)
	}
	if _, err := whenHolds(cw, 0, 0, nil); err == nil || !strings.Contains(err.Error(), "spec.when") {
		t.Fatalf("a when that fails as it runs: %v", err)
	}
}

// The last-used-schedule annotation is Argo's string: each schedule with its time zone.
func TestCronScheduleString(t *testing.T) {
	for _, tc := range []struct {
		spec CronWorkflowSpec
		want string
	}{
		{CronWorkflowSpec{Schedule: "0 3 * * *"}, "0 3 * * *"},
		{CronWorkflowSpec{Schedule: "0 3 * * *", Timezone: "Europe/Berlin"}, "CRON_TZ=Europe/Berlin 0 3 * * *"},
		{CronWorkflowSpec{Schedules: []string{"0 3 * * *", "@hourly"}, Timezone: "UTC"}, "CRON_TZ=UTC 0 3 * * *,CRON_TZ=UTC @hourly"},
	} {
		if got := cronScheduleString(&tc.spec); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.spec, got, tc.want)
		}
	}
}
