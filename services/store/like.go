package store

import "strings"

// likeEscaper escapes LIKE's wildcards and its escape character, so that a person's
// search for "a_b" or "50%" finds those characters and not any.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// containing is the pattern, for LIKE with ESCAPE '\' against a LOWER()ed column, of
// the text that holds s in any letter case.
func containing(s string) string {
	return "%" + likeEscaper.Replace(strings.ToLower(s)) + "%"
}
