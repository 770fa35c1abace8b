package billing

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Resource names a limited resource, as the catalogue, the API and refusals name it.
type Resource string

// The limited resources.
const (
	Users              Resource = "users"                // members of the account
	Runners            Resource = "runners"              // registered runners
	ConcurrentBuilds   Resource = "concurrent-builds"    // builds running (or waiting for approval, or terminating) at once
	BuildMinutes       Resource = "build-minutes"        // builds' run time per calendar month (UTC)
	HostedRuntimes     Resource = "hosted-runtimes"      // hosted runtimes (the platform runs at most one per account)
	ClustersPerRuntime Resource = "clusters-per-runtime" // managed clusters of one runtime
	Applications       Resource = "applications"         // applications across the account's runtimes
)

// Resources lists every limited resource in the order plans show them.
var Resources = []Resource{Users, Runners, ConcurrentBuilds, BuildMinutes, HostedRuntimes, ClustersPerRuntime, Applications}

// Unlimited is the limit of a resource a plan does not bound.
const Unlimited int64 = -1

// noun is how a refusal names n of r.
func (r Resource) noun(n int64) string {
	one := map[Resource]string{Users: "user", Runners: "runner", ConcurrentBuilds: "concurrent build", BuildMinutes: "build minute",
		HostedRuntimes: "hosted runtime", ClustersPerRuntime: "cluster per runtime", Applications: "application"}[r]
	if n == 1 {
		return one
	}
	if r == ClustersPerRuntime {
		return "clusters per runtime"
	}
	return one + "s"
}

// Plan is one plan of the catalogue.
type Plan struct {
	Name  string
	Title string
	// Limits holds each resource's limit (Unlimited when the plan does not bound it).
	Limits map[Resource]int64
}

// Limit returns p's limit of r (Unlimited when p does not bound it).
func (p Plan) Limit(r Resource) int64 {
	if n, ok := p.Limits[r]; ok {
		return n
	}
	return Unlimited
}

// Catalogue is the operator's plans and the plan of accounts never put on one.
type Catalogue struct {
	Default string
	Plans   []Plan
}

// Plan returns the plan named name.
func (c Catalogue) Plan(name string) (Plan, bool) {
	for _, p := range c.Plans {
		if p.Name == name {
			return p, true
		}
	}
	return Plan{}, false
}

// Names lists the plans' names in catalogue order.
func (c Catalogue) Names() []string {
	out := make([]string, len(c.Plans))
	for i, p := range c.Plans {
		out[i] = p.Name
	}
	return out
}

//go:embed plans.yaml
var defaultPlans []byte

// DefaultCatalogue is the catalogue Freshet ships with (plans.yaml: free, team, enterprise).
func DefaultCatalogue() Catalogue {
	c, err := ParseCatalogue("plans.yaml", defaultPlans)
	if err != nil {
		panic("billing: the embedded plans.yaml: " + err.Error())
	}
	return c
}

const (
	maxCatalogueBytes = 1 << 20
	maxPlans          = 100
)

var planNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

type fileCatalogue struct {
	Default string     `yaml:"default"`
	Plans   []filePlan `yaml:"plans"`
}

type filePlan struct {
	Name   string               `yaml:"name"`
	Title  string               `yaml:"title"`
	Limits map[string]yaml.Node `yaml:"limits"`
}

// ParseCatalogue decodes a catalogue (YAML, as plans.yaml) read from name. It refuses unknown
// keys, unknown resources, limits that are not a whole number ≥ 0 or "unlimited", plan names
// that repeat or are not 1-40 lowercase letters, digits and '-', and a default that names no
// plan; errors name the file, the line and the field.
func ParseCatalogue(name string, data []byte) (Catalogue, error) {
	if len(data) > maxCatalogueBytes {
		return Catalogue{}, errdefs.Invalid(name, "", fmt.Sprintf("is larger than %d bytes", maxCatalogueBytes))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f fileCatalogue
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return Catalogue{}, errdefs.Invalid(name, "", "is empty: list plans under 'plans:'")
		}
		return Catalogue{}, errdefs.Invalid(name, "", "is not a plan catalogue: "+strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(f.Plans) == 0 {
		return Catalogue{}, errdefs.Invalid(name+": plans", "", "lists no plan")
	}
	if len(f.Plans) > maxPlans {
		return Catalogue{}, errdefs.Invalid(name+": plans", "", fmt.Sprintf("lists %d plans; at most %d", len(f.Plans), maxPlans))
	}
	c := Catalogue{Default: f.Default}
	for i, fp := range f.Plans {
		field := fmt.Sprintf("%s: plans[%d]", name, i)
		if !planNameRE.MatchString(fp.Name) {
			return Catalogue{}, errdefs.Invalid(field+".name", fp.Name, "is not a plan name: use 1-40 lowercase letters, digits and '-', starting with a letter or digit")
		}
		if _, dup := c.Plan(fp.Name); dup {
			return Catalogue{}, errdefs.Invalid(field+".name", fp.Name, "names a plan listed before")
		}
		if len(fp.Title) > 100 {
			return Catalogue{}, errdefs.Invalid(field+".title", fp.Title, "is longer than 100 characters")
		}
		p := Plan{Name: fp.Name, Title: fp.Title, Limits: map[Resource]int64{}}
		if p.Title == "" {
			p.Title = p.Name
		}
		for k, node := range fp.Limits {
			r := Resource(k)
			lf := fmt.Sprintf("%s:%d: plans[%d].limits.%s", name, node.Line, i, k)
			if !slices.Contains(Resources, r) {
				return Catalogue{}, errdefs.Invalid(lf, k, "is not a limited resource: use "+resourceList())
			}
			n, err := parseLimit(node)
			if err != nil {
				return Catalogue{}, errdefs.Invalid(lf, node.Value, err.Error())
			}
			p.Limits[r] = n
		}
		c.Plans = append(c.Plans, p)
	}
	if c.Default == "" {
		return Catalogue{}, errdefs.Invalid(name+": default", "", "is missing: name the plan of accounts never put on one ("+strings.Join(c.Names(), ", ")+")")
	}
	if _, ok := c.Plan(c.Default); !ok {
		return Catalogue{}, errdefs.Invalid(name+": default", c.Default, "names no plan of the catalogue: use "+strings.Join(c.Names(), ", "))
	}
	return c, nil
}

func parseLimit(node yaml.Node) (int64, error) {
	if node.Kind != yaml.ScalarNode {
		return 0, errors.New("is not a limit: give a whole number ≥ 0 or \"unlimited\"")
	}
	if node.Value == "unlimited" {
		return Unlimited, nil
	}
	n, err := strconv.ParseInt(node.Value, 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return 0, errors.New("is not a limit: give a whole number from 0 to 2^40 or \"unlimited\"")
	}
	return n, nil
}

func resourceList() string {
	s := make([]string, len(Resources))
	for i, r := range Resources {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Options are the operator's billing settings: flags, FRESHET_* variables and config-file keys.
type Options struct {
	// PlansFile is a YAML plan catalogue; empty: the embedded default (plans.yaml).
	PlansFile string
	// DefaultPlan overrides the catalogue's plan for accounts never put on one.
	DefaultPlan string
	// ReservationTTL is how long a limit reservation counts without the runtime reporting its
	// object (0: ReservationTTL). Not a flag: tests shorten it.
	ReservationTTL time.Duration
}

// BindFlags registers the options on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PlansFile, "billing-plans", "", "YAML file of the billing plan catalogue (plans, their limits, the default plan) (default: the embedded free/team/enterprise catalogue)")
	fs.StringVar(&o.DefaultPlan, "billing-default-plan", "", "plan of accounts never put on one with 'freshet plan set' (default: the catalogue's 'default')")
}

// Catalogue loads the catalogue the options name and applies DefaultPlan; errors name the
// file, the line and the field.
func (o Options) Catalogue() (Catalogue, error) {
	c := DefaultCatalogue()
	if o.PlansFile != "" {
		data, err := os.ReadFile(o.PlansFile)
		if err != nil {
			return Catalogue{}, fmt.Errorf("billing-plans: %w", err)
		}
		if c, err = ParseCatalogue(o.PlansFile, data); err != nil {
			return Catalogue{}, err
		}
	}
	if o.DefaultPlan != "" {
		if _, ok := c.Plan(o.DefaultPlan); !ok {
			return Catalogue{}, errdefs.Invalid("billing-default-plan", o.DefaultPlan, "names no plan of the catalogue: use "+strings.Join(c.Names(), ", "))
		}
		c.Default = o.DefaultPlan
	}
	return c, nil
}

// Validate checks the options by loading the catalogue.
func (o Options) Validate() error {
	_, err := o.Catalogue()
	return err
}
