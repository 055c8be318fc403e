package jobs

import (
	"errors"
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
)

// SplitCommand reads a command line as a shell would, and JoinCommand writes one that
// reads back the same.
func TestCommandLines(t *testing.T) {
	for line, want := range map[string][]string{
		`python train.py --lr 0.1`:          {"python", "train.py", "--lr", "0.1"},
		`  sh -c 'echo "hi there"; exit 3'`: {"sh", "-c", `echo "hi there"; exit 3`},
		`a "b \"c\" \d" e\ f ''`:            {"a", `b "c" \d`, "e f", ""},
		`'it'\''s'`:                         {"it's"},
		"":                                  nil,
	} {
		got, err := SplitCommand(line)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("split %q = %q, %v; want %q", line, got, err, want)
		}
	}
	for _, line := range []string{`echo 'open`, `echo "open`} {
		var fe *models.FieldError
		if _, err := SplitCommand(line); !errors.As(err, &fe) || fe.Field != "command" {
			t.Errorf("split %q: %v, want a command error", line, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"python", "train.py", "--lr=0.1"}, `python train.py --lr=0.1`},
		{[]string{"sh", "-c", "for i in 1 2; do echo $i; done"}, `sh -c 'for i in 1 2; do echo $i; done'`},
		{[]string{"echo", "it's", ""}, `echo 'it'\''s' ''`},
	} {
		got := JoinCommand(tc.args)
		back, err := SplitCommand(got)
		if got != tc.want || err != nil || !slices.Equal(back, tc.args) {
			t.Errorf("join %q = %s, read back as %q, %v; want %s", tc.args, got, back, err, tc.want)
		}
	}
}
