package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
)

// masterKeyCommand manages the master keys that encrypt secrets at rest. It works on the
// database directly, like the server: run it where the server runs, with the same settings.
func (a *app) masterKeyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "master-key", Short: "Generate and rotate the master keys that encrypt secrets at rest"}
	gen := &cobra.Command{
		Use:   "generate FILE",
		Short: "Write a new key file (mode 0600) for --master-key-file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kr, err := secrets.GenerateKeyFile(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Wrote %s with primary key %s. Give every replica the same file: --master-key-file %s\n", args[0], kr.Primary(), args[0])
			return nil
		},
	}
	var opts server.Options
	var retireOld bool
	bind := func(c *cobra.Command) {
		c.Flags().StringVar(&opts.DataDir, "data-dir", server.DefaultDataDir(), "the server's data directory")
		c.Flags().StringVar(&opts.DB, "db", "", "the server's database (default: SQLite in --data-dir)")
		c.Flags().StringVar(&opts.MasterKeyFile, "master-key-file", "", "the key file (default: master.key in --data-dir for SQLite)")
	}
	rotate := &cobra.Command{
		Use:   "rotate [--retire-old]",
		Short: "Add a new primary key and re-encrypt every stored secret with it",
		Long: "Adds a new primary key to the key file, re-encrypts every secret context value, encrypted\n" +
			"pipeline variable and webhook secret with it in one transaction, and with --retire-old removes\n" +
			"the previous key. Restart the servers afterwards so they load the new key file; with several\n" +
			"replicas, copy the file to each first and retire the old key only once all run with it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), ""); err != nil {
				return err
			}
			if os.Getenv(secrets.EnvMasterKey) != "" && opts.MasterKeyFile == "" {
				return errors.New("the master keys come from " + secrets.EnvMasterKey + ": rotation needs a key file (--master-key-file) it can write")
			}
			kr, err := server.LoadKeyring(opts)
			if err != nil {
				return err
			}
			old := kr.Primary()
			db, err := store.Open(cmd.Context(), opts.DSN(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			id, err := kr.Rotate()
			if err != nil {
				return err
			}
			n, err := server.ReencryptSecrets(cmd.Context(), db, kr)
			if err != nil {
				return fmt.Errorf("re-encrypt secrets (the new key %s stays in the key file; run rotate again): %w", id, err)
			}
			fmt.Fprintf(a.stdout, "New primary key %s; re-encrypted %d secret values.\n", id, n)
			if retireOld {
				if err := kr.Retire(old); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Retired key %s.\n", old)
			} else {
				fmt.Fprintf(a.stdout, "The old key %s can still decrypt; retire it with 'freshet master-key retire %s' once every replica has the new file.\n", old, old)
			}
			return nil
		},
	}
	bind(rotate)
	rotate.Flags().BoolVar(&retireOld, "retire-old", false, "remove the previous primary key after re-encrypting")
	retire := &cobra.Command{
		Use:   "retire KEY_ID",
		Short: "Remove a key that is no longer primary from the key file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kr, err := server.LoadKeyring(opts)
			if err != nil {
				return err
			}
			if err := kr.Retire(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Retired key %s.\n", args[0])
			return nil
		},
	}
	bind(retire)
	cmd.AddCommand(gen, rotate, retire)
	return cmd
}
