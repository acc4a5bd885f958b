package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/internal/pemfile"
	"weir/internal/srclient"
	"weir/schemas"
)

// RegistryEnv names the environment variable with the default registry URL.
const RegistryEnv = srclient.EnvURL

// DefaultRegistryURL is the registry a local `weir broker` serves.
const DefaultRegistryURL = "http://127.0.0.1:8081"

func registryDefault() string {
	if v := strings.TrimSpace(os.Getenv(RegistryEnv)); v != "" {
		return v
	}
	return DefaultRegistryURL
}

// registryFlags are the flags of every command that talks to a registry.
type registryFlags struct {
	url     string
	timeout time.Duration
	// TLS and basic auth: flags, else the WEIR_REGISTRY_* variables
	// (srclient.Options.Env).
	userInfo, caFile, certFile, keyFile string
	// --command-config (shared with the client flags): Confluent's
	// schema.registry.url, basic.auth.user.info, schema.registry.ssl.*
	// for what the flags leave unset.
	cc *string
	fs *pflag.FlagSet
}

func addRegistryFlags(cmd *cobra.Command) *registryFlags {
	f := &registryFlags{cc: addCommandConfigFlag(cmd), fs: cmd.Flags()}
	cmd.Flags().StringVar(&f.url, "registry", registryDefault(), "schema registry URL(s), comma-separated, http:// or https:// (default from $"+RegistryEnv+")")
	cmd.Flags().Lookup("registry").DefValue = srclient.Redact(registryDefault())
	cmd.Flags().StringVar(&f.userInfo, "registry-user-info", "", "basic auth USER:PASSWORD for the registry (Confluent's basic.auth.user.info; default $"+srclient.EnvUserInfo+", which keeps the password out of the process list)")
	cmd.Flags().StringVar(&f.caFile, "registry-ca-file", "", "PEM CA certificates that sign an https registry's certificate (default $"+srclient.EnvCAFile+", else the system's)")
	cmd.Flags().StringVar(&f.certFile, "registry-cert-file", "", "PEM client certificate for a registry requiring mutual TLS (default $"+srclient.EnvCertFile+")")
	cmd.Flags().StringVar(&f.keyFile, "registry-key-file", "", "PEM key of --registry-cert-file (default $"+srclient.EnvKeyFile+"; an encrypted PKCS#8 key's password in $"+srclient.EnvKeyPass+")")
	if cmd.Flags().Lookup("timeout") == nil {
		cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "how long one registry request may take")
	}
	return f
}

func (f *registryFlags) client() (*sr.Client, error) {
	var keyPass pemfile.Secret // schema.registry.ssl.key.password of --command-config
	if *f.cc != "" {
		set, err := readCommandConfig(*f.cc, zap.NewNop())
		if err != nil {
			return nil, err
		}
		o := set.Registry.SRClient()
		keyPass = o.KeyPassword
		if o.URLs != "" && !f.fs.Changed("registry") && os.Getenv(RegistryEnv) == "" {
			f.url = o.URLs
		}
		for _, p := range []struct {
			dst *string
			v   string
		}{{&f.userInfo, o.UserInfo}, {&f.caFile, o.CAFile}, {&f.certFile, o.CertFile}, {&f.keyFile, o.KeyFile}} {
			if *p.dst == "" {
				*p.dst = p.v
			}
		}
	}
	cl, err := srclient.New(srclient.Options{URLs: f.url, UserInfo: f.userInfo, CAFile: f.caFile,
		CertFile: f.certFile, KeyFile: f.keyFile, KeyPassword: keyPass, UserAgent: "weir"}.Env())
	if err != nil {
		return nil, fmt.Errorf("--registry %s: %w", srclient.Redact(f.url), err)
	}
	return cl, nil
}

// explain turns registry errors into messages that say what to do.
func (f *registryFlags) explain(err error) error {
	if err == nil {
		return nil
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return fmt.Errorf("schema registry %s: %s (error %d)", srclient.Redact(f.url), re.Message, re.ErrorCode)
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Errorf("%w (is a registry running at %s? `weir broker` serves one on :8081; set --registry or $%s)", err, srclient.Redact(f.url), RegistryEnv)
	}
	return err
}

// withRegistry runs fn with a registry client and a context that bounds
// the command's requests by --timeout.
func (f *registryFlags) withRegistry(parent context.Context, fn func(ctx context.Context, cl *sr.Client) error) error {
	cl, err := f.client()
	if err != nil {
		return err
	}
	ctx, cancel := f.ctx(parent)
	defer cancel()
	return fn(ctx, cl)
}

func (f *registryFlags) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	t := f.timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return context.WithTimeout(parent, t)
}

// readSchemaFile reads and validates an Avro schema file.
func readSchemaFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if _, err := schemas.Parse(string(b)); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(b), nil
}

func parseVersionFlag(s string) (int, error) {
	if s == "" || s == "latest" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--version %q: want a version number >= 1 or latest", s)
	}
	return n, nil
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		cmd := &cobra.Command{
			Use:   "schema",
			Short: "Register, inspect, check and delete Avro schemas in a schema registry",
			Long: `Manage Avro schemas in weir's schema registry (served by weir broker on
--registry-addr, default :8081) or any Confluent-compatible registry.
Schemas are registered under subjects, by default <topic>-value.`,
			Example: `  weir schema register users-value --file user.avsc
  weir schema get 1
  weir schema get users-value --version latest
  weir schema check users-value --file user-v2.avsc
  weir schema config users-value --set FULL
  weir schema delete users-value --version 1`,
		}
		cmd.AddCommand(schemaRegisterCmd(), schemaGetCmd(), schemaListCmd(), schemaCheckCmd(), schemaDeleteCmd(), schemaConfigCmd())
		return cmd
	})
}

func schemaRegisterCmd() *cobra.Command {
	var file string
	var normalize bool
	cmd := &cobra.Command{
		Use:   "register SUBJECT --file FILE",
		Short: "Register an Avro schema under a subject and print its id",
		Long: `Register the Avro schema in FILE under SUBJECT. If the subject already has
the same schema (formatting does not matter) its id is printed and nothing
changes; otherwise the registry checks compatibility with the subject's
level and adds a version.`,
		Args: cobra.ExactArgs(1),
	}
	rf := addRegistryFlags(cmd)
	cmd.Flags().StringVar(&file, "file", "", "Avro schema file (.avsc) (required)")
	cmd.Flags().BoolVar(&normalize, "normalize", false, "ask the registry to normalize the schema (Confluent's normalize=true)")
	_ = cmd.MarkFlagRequired("file")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		text, err := readSchemaFile(file)
		if err != nil {
			return err
		}
		return rf.withRegistry(cmd.Context(), func(ctx context.Context, cl *sr.Client) error {
			if normalize {
				ctx = sr.WithParams(ctx, sr.Normalize)
			}
			ss, err := cl.CreateSchema(ctx, args[0], sr.Schema{Schema: text, Type: sr.TypeAvro})
			if err != nil {
				return rf.explain(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "subject %s version %d id %d\n", ss.Subject, ss.Version, ss.ID)
			return nil
		})
	}
	return cmd
}

func schemaGetCmd() *cobra.Command {
	var version string
	var raw bool
	cmd := &cobra.Command{
		Use:   "get ID | get SUBJECT [--version V]",
		Short: "Print a schema by id, or a subject's version (default latest)",
		Args:  cobra.ExactArgs(1),
	}
	rf := addRegistryFlags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "subject version number or latest (default latest)")
	cmd.Flags().BoolVar(&raw, "raw", false, "print only the schema text")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return rf.withRegistry(cmd.Context(), func(ctx context.Context, cl *sr.Client) error {
			out := cmd.OutOrStdout()
			if id, err := strconv.Atoi(args[0]); err == nil && version == "" {
				s, err := cl.SchemaByID(ctx, id)
				if err != nil {
					return rf.explain(err)
				}
				if raw {
					fmt.Fprintln(out, s.Schema)
					return nil
				}
				return printJSON(out, map[string]any{"id": id, "schema": json.RawMessage(schemaOrString(s.Schema))})
			}
			v, err := parseVersionFlag(version)
			if err != nil {
				return err
			}
			ss, err := cl.SchemaByVersion(ctx, args[0], v)
			if err != nil {
				return rf.explain(err)
			}
			if raw {
				fmt.Fprintln(out, ss.Schema.Schema)
				return nil
			}
			return printJSON(out, map[string]any{"subject": ss.Subject, "version": ss.Version, "id": ss.ID,
				"schema": json.RawMessage(schemaOrString(ss.Schema.Schema))})
		})
	}
	return cmd
}

// schemaOrString returns the schema as JSON (it is JSON) or as a JSON string.
func schemaOrString(s string) []byte {
	if json.Valid([]byte(s)) {
		return []byte(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func printJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func schemaListCmd() *cobra.Command {
	var deleted bool
	var prefix string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List subjects with their versions and latest schema id",
		Args:  cobra.NoArgs,
	}
	rf := addRegistryFlags(cmd)
	cmd.Flags().BoolVar(&deleted, "deleted", false, "include soft-deleted subjects and versions")
	cmd.Flags().StringVar(&prefix, "prefix", "", "only subjects starting with this prefix")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return rf.withRegistry(cmd.Context(), func(ctx context.Context, cl *sr.Client) error {
			if deleted {
				ctx = sr.WithParams(ctx, sr.ShowDeleted)
			}
			subjects, err := cl.Subjects(ctx)
			if err != nil {
				return rf.explain(err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SUBJECT\tVERSIONS\tLATEST ID")
			for _, s := range subjects {
				if !strings.HasPrefix(s, prefix) {
					continue
				}
				vs, err := cl.SubjectVersions(ctx, s)
				if err != nil {
					return rf.explain(err)
				}
				latest, err := cl.SchemaByVersion(ctx, s, vs[len(vs)-1])
				if err != nil {
					return rf.explain(err)
				}
				parts := make([]string, len(vs))
				for i, v := range vs {
					parts[i] = strconv.Itoa(v)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\n", s, strings.Join(parts, ","), latest.ID)
			}
			return tw.Flush()
		})
	}
	return cmd
}

func schemaCheckCmd() *cobra.Command {
	var file, version string
	cmd := &cobra.Command{
		Use:   "check SUBJECT --file FILE",
		Short: "Check a schema against a subject's compatibility level without registering it",
		Long: `Check whether the Avro schema in FILE may be registered under SUBJECT:
against the latest version by default, every version the subject's level
asks for with --version all, or one version. Prints "compatible", or the
reasons and exits with status 1.`,
		Args: cobra.ExactArgs(1),
	}
	rf := addRegistryFlags(cmd)
	cmd.Flags().StringVar(&file, "file", "", "Avro schema file (.avsc) (required)")
	cmd.Flags().StringVar(&version, "version", "latest", "version to check against: a number, latest, or all")
	_ = cmd.MarkFlagRequired("file")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		text, err := readSchemaFile(file)
		if err != nil {
			return err
		}
		v := -2
		if version != "all" {
			if v, err = parseVersionFlag(version); err != nil {
				return err
			}
		}
		return rf.withRegistry(cmd.Context(), func(ctx context.Context, cl *sr.Client) error {
			res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), args[0], v, sr.Schema{Schema: text, Type: sr.TypeAvro})
			if err != nil {
				return rf.explain(err)
			}
			out := cmd.OutOrStdout()
			if res.Is {
				fmt.Fprintln(out, "compatible")
				return nil
			}
			fmt.Fprintln(out, "incompatible:")
			for _, m := range res.Messages {
				fmt.Fprintln(out, "  "+m)
			}
			return fmt.Errorf("schema %s is not compatible with subject %s", file, args[0])
		})
	}
	return cmd
}

func schemaDeleteCmd() *cobra.Command {
	var version string
	var permanent bool
	cmd := &cobra.Command{
		Use:   "delete SUBJECT [--version V] [--permanent]",
		Short: "Soft-delete a subject or one version; --permanent removes a soft-deleted one for good",
		Args:  cobra.ExactArgs(1),
	}
	rf := addRegistryFlags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "delete only this version (a number or latest)")
	cmd.Flags().BoolVar(&permanent, "permanent", false, "hard delete (the subject or version must be soft-deleted first)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return rf.withRegistry(cmd.Context(), func(ctx context.Context, cl *sr.Client) error {
			how := sr.SoftDelete
			if permanent {
				how = sr.HardDelete
			}
			out := cmd.OutOrStdout()
			if version != "" {
				v, err := parseVersionFlag(version)
				if err != nil {
					return err
				}
				if err := cl.DeleteSchema(ctx, args[0], v, how); err != nil {
					return rf.explain(err)
				}
				fmt.Fprintf(out, "deleted %s version %s\n", args[0], version)
				return nil
			}
			vs, err := cl.DeleteSubject(ctx, args[0], how)
			if err != nil {
				return rf.explain(err)
			}
			fmt.Fprintf(out, "deleted %s versions %v\n", args[0], vs)
			return nil
		})
	}
	return cmd
}

func schemaConfigCmd() *cobra.Command {
	var set string
	cmd := &cobra.Command{
		Use:   "config [SUBJECT] [--set LEVEL]",
		Short: "Show or set the compatibility level, globally or of one subject",
		Long: `Print the compatibility level of SUBJECT (its own, else the global one), or
the global level without SUBJECT. --set changes it: BACKWARD (default),
BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE.`,
		Args: cobra.MaximumNArgs(1),
	}
	rf := addRegistryFlags(cmd)
	cmd.Flags().StringVar(&set, "set", "", "new compatibility level")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var subjects []string
		if len(args) == 1 {
			subjects = args
		}
		return rf.withRegistry(cmd.Context(), func(ctx context.Context, cl *sr.Client) error {
			var res []sr.CompatibilityResult
			if set != "" {
				level, err := schemas.ParseLevel(set)
				if err != nil {
					return fmt.Errorf("--set: %w", err)
				}
				var l sr.CompatibilityLevel
				if err := l.UnmarshalText([]byte(level)); err != nil {
					return err
				}
				res = cl.SetCompatibility(ctx, sr.SetCompatibility{Level: l}, subjects...)
			} else {
				res = cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), subjects...)
			}
			for _, r := range res {
				if r.Err != nil {
					return rf.explain(r.Err)
				}
				name := r.Subject
				if name == "" {
					name = "(global)"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, r.Level)
			}
			return nil
		})
	}
	return cmd
}
