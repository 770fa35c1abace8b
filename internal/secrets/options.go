package secrets

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Options says where the master keys come from.
type Options struct {
	// MasterKeyFile is the key file (--master-key-file). When empty, the keys come from the
	// EnvMasterKey variable, or else from the data directory given to Open, if any.
	MasterKeyFile string
}

// BindFlags registers the options as command-line flags on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MasterKeyFile, "master-key-file", o.MasterKeyFile,
		"file of master keys that encrypt secrets at rest (mode 0600; see docs/secrets.md); or set "+EnvMasterKey)
}

// Validate reports an invalid field, naming it, its value and what is valid. It also refuses a key
// file and EnvMasterKey set together: which one holds the real keys would be a guess.
func (o *Options) Validate() error {
	var errs []error
	if o.MasterKeyFile != "" && strings.TrimSpace(o.MasterKeyFile) == "" {
		errs = append(errs, fmt.Errorf("%w: MasterKeyFile = %q: want a path, or empty to use %s", ErrInvalidKeyFile, o.MasterKeyFile, EnvMasterKey))
	}
	if o.MasterKeyFile != "" && os.Getenv(EnvMasterKey) != "" {
		errs = append(errs, fmt.Errorf("%w: MasterKeyFile = %q and %s are both set: use one", ErrInvalidKeyFile, o.MasterKeyFile, EnvMasterKey))
	}
	return errors.Join(errs...)
}

// Open returns the keyring the options name: MasterKeyFile if set, else EnvMasterKey if set, else,
// when createDir is not empty, MasterKeyFileName in createDir, created on first start (created
// reports that). `freshet up` passes its data directory; a production server passes "" so that a
// missing key is an error rather than a new key that cannot read the existing secrets.
func (o *Options) Open(createDir string) (kr *Keyring, created bool, err error) {
	if err := o.Validate(); err != nil {
		return nil, false, err
	}
	switch {
	case o.MasterKeyFile != "":
		kr, err = LoadFile(o.MasterKeyFile)
		return kr, false, err
	case os.Getenv(EnvMasterKey) != "":
		kr, err = LoadEnv()
		return kr, false, err
	case createDir != "":
		return LoadOrCreate(createDir)
	default:
		return nil, false, ErrNoMasterKey
	}
}
