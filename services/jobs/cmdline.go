package jobs

import (
	"errors"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// errOpenQuote is a command with a quote that does not close.
var errOpenQuote = errors.New("open quote")

// SplitCommand splits a command line into arguments as a POSIX shell would, with
// 'single' and "double" quotes and backslash escapes, but no expansion: what is typed
// is what runs. An open quote is an error on the field "command".
func SplitCommand(line string) ([]string, error) {
	args, err := shellWords(line)
	if err != nil {
		return nil, models.Invalid("command", "has a quote that does not close; quote an argument with spaces as 'like this'")
	}
	return args, nil
}

func shellWords(line string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errOpenQuote
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`+"`", line[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errOpenQuote
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			if line[i] != '\n' {
				cur.WriteByte(line[i])
				inWord = true
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// JoinCommand writes arguments as a command line that SplitCommand (and a shell) reads
// back: an argument that is not a plain word is single-quoted.
func JoinCommand(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = quoteArg(a)
	}
	return strings.Join(out, " ")
}

func quoteArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n\r'\"\\$`;&|<>()*?[]{}#~!") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
