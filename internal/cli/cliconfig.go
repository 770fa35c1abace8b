package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"
)

// EnvCLIConfig overrides where the CLI keeps its contexts.
const EnvCLIConfig = "FRESHET_CLI_CONFIG"

// Context is one saved server login.
type Context struct {
	Name    string `yaml:"name"`
	Server  string `yaml:"server"`
	Token   string `yaml:"token"`
	Kind    string `yaml:"kind"` // "session" or "apikey"
	User    string `yaml:"user,omitempty"`
	Account string `yaml:"account,omitempty"`
}

// File is the CLI's config file (~/.config/freshet/config.yaml), written with mode 0600.
type File struct {
	CurrentContext string    `yaml:"current-context"`
	Contexts       []Context `yaml:"contexts"`

	path string
}

func cliConfigPath() (string, error) {
	if p := os.Getenv(EnvCLIConfig); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory: %w (set %s)", err, EnvCLIConfig)
	}
	return filepath.Join(dir, "freshet", "config.yaml"), nil
}

func loadCLIConfig() (*File, error) {
	path, err := cliConfigPath()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &File{path: path}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCLIConfig(path, data)
}

// parseCLIConfig decodes the config file at path from data; errors name the path.
func parseCLIConfig(path string, data []byte) (*File, error) {
	f := &File{path: path}
	if err := yaml.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func (f *File) save() error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	data, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

func (f *File) find(name string) (*Context, bool) {
	for i := range f.Contexts {
		if f.Contexts[i].Name == name {
			return &f.Contexts[i], true
		}
	}
	return nil, false
}

func (f *File) upsert(c Context) {
	if cur, ok := f.find(c.Name); ok {
		*cur = c
	} else {
		f.Contexts = append(f.Contexts, c)
		sort.Slice(f.Contexts, func(i, j int) bool { return f.Contexts[i].Name < f.Contexts[j].Name })
	}
}

func (f *File) remove(name string) bool {
	for i := range f.Contexts {
		if f.Contexts[i].Name == name {
			f.Contexts = append(f.Contexts[:i], f.Contexts[i+1:]...)
			if f.CurrentContext == name {
				f.CurrentContext = ""
			}
			return true
		}
	}
	return false
}
