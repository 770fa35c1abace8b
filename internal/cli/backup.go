package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/internal/backup"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/server"
)

// bindStoreFlags registers the server's database and key-file flags, as `freshet master-key` has them.
func bindStoreFlags(c *cobra.Command, opts *server.Options) {
	c.Flags().StringVar(&opts.DataDir, "data-dir", server.DefaultDataDir(), "the server's data directory")
	c.Flags().StringVar(&opts.DB, "db", "", "the server's database (default: SQLite in --data-dir)")
	c.Flags().StringVar(&opts.MasterKeyFile, "master-key-file", "", "the server's key file (default: master.key in --data-dir)")
}

func backupOptions(o server.Options) backup.Options {
	return backup.Options{DSN: o.DSN(), DataDir: o.DataDir, MasterKeyFile: o.MasterKeyFile}
}

// backupCommand is `freshet admin backup`: an online snapshot of the SQLite database.
func (a *app) backupCommand() *cobra.Command {
	var opts server.Options
	var out string
	var includeKey bool
	cmd := &cobra.Command{
		Use:   "backup --out FILE [--include-master-key]",
		Short: "Write a consistent backup archive of the SQLite database while the server runs",
		Long: "Takes an online, consistent snapshot of the SQLite database (VACUUM INTO: writers go on) and\n" +
			"writes it with a manifest (Freshet version, schema version, time, checksum, the master key IDs\n" +
			"the secrets need) to a .tar.gz, mode 0600, renamed into place when complete. The master key\n" +
			"is not included unless --include-master-key: keep the key file apart from the backups.\n" +
			"PostgreSQL is backed up with pg_dump (docs/operations.md, \"Backup and restore\").",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), ""); err != nil {
				return err
			}
			if out == "" {
				return usageError("--out is required: the archive to write (backup.tar.gz)")
			}
			res, err := backup.Backup(cmd.Context(), backupOptions(opts), out, includeKey)
			if err != nil {
				return err
			}
			m := res.Manifest
			keys := "none (no secrets stored)"
			if len(m.KeyIDs) > 0 {
				keys = strings.Join(m.KeyIDs, ", ")
			}
			fmt.Fprintf(a.stdout, "Wrote %s: schema version %d, database %d bytes (sha256 %s), master keys needed: %s.\n",
				res.Path, m.SchemaVersion, m.Database.Size, m.Database.SHA256, keys)
			switch {
			case m.MasterKey != nil:
				fmt.Fprintf(a.stdout, "The archive holds the master key from %s: whoever reads it can decrypt every secret. Keep it apart from other backups.\n", res.KeyFile)
			case res.KeyFile != "":
				fmt.Fprintf(a.stdout, "The master key is not in the archive: back up %s separately; a restore needs it.\n", res.KeyFile)
			default:
				fmt.Fprintln(a.stdout, "The master key is not in the archive: keep the value of FRESHET_MASTER_KEY separately; a restore needs it.")
			}
			return nil
		},
	}
	bindStoreFlags(cmd, &opts)
	cmd.Flags().StringVar(&out, "out", "", "the archive to write (must not exist)")
	cmd.Flags().BoolVar(&includeKey, "include-master-key", false, "put the key file in the archive too (keep such an archive apart)")
	return cmd
}

// restoreCommand is `freshet admin restore`: replace the SQLite database with a backup's.
func (a *app) restoreCommand() *cobra.Command {
	var opts server.Options
	var from string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore --from FILE [--force]",
		Short: "Replace the SQLite database with a backup archive's, after checking it (stop the server first)",
		Long: "Checks the archive (checksum, a schema version not newer than this binary's) and that the\n" +
			"master keys the server would use (--master-key-file, FRESHET_MASTER_KEY or master.key in\n" +
			"--data-dir; the archive's own key if there is none) decrypt every secret in it, then writes\n" +
			"the database beside its place and renames it over. It refuses while a server uses the\n" +
			"database, and to replace an existing one without --force. Migrations run at the next start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), ""); err != nil {
				return err
			}
			if from == "" {
				return usageError("--from is required: the archive 'freshet admin backup' wrote")
			}
			res, err := backup.Restore(cmd.Context(), backupOptions(opts), from, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Restored %s from %s (made %s by freshet %s, schema version %d); %d secret values decrypt with the keys from %s.\n",
				res.Path, from, res.Manifest.CreatedAt.Format("2006-01-02T15:04:05Z07:00"), res.Manifest.FreshetVersion, res.Manifest.SchemaVersion, res.Secrets, res.KeySource)
			if res.InstalledKey != "" {
				fmt.Fprintf(a.stdout, "Installed the archive's master key as %s.\n", res.InstalledKey)
			}
			return nil
		},
	}
	bindStoreFlags(cmd, &opts)
	cmd.Flags().StringVar(&from, "from", "", "the backup archive to restore")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing database")
	return cmd
}
