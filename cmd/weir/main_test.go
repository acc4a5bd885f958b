package main

import (
	"slices"
	"testing"
)

func TestTerraformStyleArgs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"run", "p", "-var", "a=1", "-var=b=2", "-var-file", "x.hcl", "-var-file=y.hcl"},
			[]string{"run", "p", "--var", "a=1", "--var=b=2", "--var-file", "x.hcl", "--var-file=y.hcl"}},
		{[]string{"run", "--var", "a=1", "-v", "-variable"}, []string{"run", "--var", "a=1", "-v", "-variable"}},
		{[]string{"produce", "t", "--", "-var"}, []string{"produce", "t", "--", "-var"}},
	} {
		if got := terraformStyleArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("terraformStyleArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
