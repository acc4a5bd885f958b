// Command weir is the one binary of the weir log-pipeline appliance.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	root := newRootCmd()
	root.SetArgs(terraformStyleArgs(os.Args[1:]))
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		os.Exit(1)
	}
}

// singleDashFlags are the long flags users coming from Terraform type with
// one dash (-var NAME=VALUE, -var-file F). The flag library reads a single
// dash as a cluster of one-letter flags, so they are given their second
// dash here.
var singleDashFlags = []string{"var", "var-file"}

// terraformStyleArgs rewrites -var and -var-file (also in their =VALUE
// forms) to --var and --var-file, up to a "--" that ends the flags.
func terraformStyleArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		for _, f := range singleDashFlags {
			if name == f {
				out[i] = "-" + a
			}
		}
	}
	return out
}
