package main

import "regexp"

// regexpLine reports whether some line of s matches the expression.
func regexpLine(s, expr string) bool {
	return regexp.MustCompile(`(?m)^` + expr + `\s*$`).MatchString(s)
}
