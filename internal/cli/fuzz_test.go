package cli

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzCLIConfig feeds arbitrary config files to parseCLIConfig, as every CLI command reads
// one: it never panics, a refusal names the file, and what is accepted saves (as save encodes
// it) to a file that reads back to the same contexts.
func FuzzCLIConfig(f *testing.F) {
	for _, s := range []string{"current-context: dev\ncontexts:\n- {name: dev, server: 'http://127.0.0.1:8080', token: fss_x, kind: session}\n",
		"contexts: [{name: a, kind: apikey, user: u, account: acc}, {name: b}]\n", "", "contexts: 3\n", "a: &a [*a]\n",
		"current-context: [x]\n", "contexts:\n- name: \"\\u0000\"\n  token: \"line\\nbreak\"\n", "!!binary x\n", "contexts: [~]\n",
		"current-context: x\ncurrent-context: y\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseCLIConfig("/home/u/.config/freshet/config.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "/home/u/.config/freshet/config.yaml: ") {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		out, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatalf("accepted config does not encode: %v", err)
		}
		again, err := parseCLIConfig("saved", out)
		if err != nil {
			t.Fatalf("saved config %q does not read back: %v", out, err)
		}
		if again.CurrentContext != cfg.CurrentContext || (len(cfg.Contexts) > 0 || len(again.Contexts) > 0) && !reflect.DeepEqual(again.Contexts, cfg.Contexts) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v", cfg, again)
		}
	})
}
