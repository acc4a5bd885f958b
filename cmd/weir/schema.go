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
	"github.com/twmb/franz-go/pkg/sr"

	"weir/schemas"
)

// RegistryEnv names the environment variable with the default registry URL.
const RegistryEnv = "WEIR_REGISTRY"

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
}

func addRegistryFlags(cmd *cobra.Command) *registryFlags {
	f := &registryFlags{}
	cmd.Flags().StringVar(&f.url, "registry", registryDefault(), "schema registry URL(s), comma-separated (default from $"+RegistryEnv+")")
	if cmd.Flags().Lookup("timeout") == nil {
		cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "how long one registry request may take")
	}
	return f
}

func (f *registryFlags) client() (*sr.Client, error) {
	var urls []string
	for _, u := range strings.Split(f.url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			if !strings.Contains(u, "://") {
				u = "http://" + u
			}
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("--registry %q names no registry URL", f.url)
	}
	return sr.NewClient(sr.URLs(urls...), sr.UserAgent("weir"))
}

// explain turns registry errors into messages that say what to do.
func (f *registryFlags) explain(err error) error {
	if err == nil {
		return nil
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return fmt.Errorf("schema registry %s: %s (error %d)", f.url, re.Message, re.ErrorCode)
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Errorf("%w (is a registry running at %s? `weir broker` serves one on :8081; set --registry or $%s)", err, f.url, RegistryEnv)
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
