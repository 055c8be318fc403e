package gpu

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	type want struct {
		model string
		count int
		mig   []string
	}
	tests := []struct {
		spec string
		want []want
	}{
		{"H100-80GB", []want{{"H100-80GB", 1, nil}}},
		{"2xA100-80GB,4xL4-24GB", []want{{"A100-80GB", 2, nil}, {"L4-24GB", 4, nil}}},
		{" 2 x a100-80gb , 1X t4-16gb ", []want{{"A100-80GB", 2, nil}, {"T4-16GB", 1, nil}}},
		{"1xA100-40GB:mig=3g.20gb+3g.20gb", []want{{"A100-40GB", 1, []string{"3g.20gb", "3g.20gb"}}}},
		{"2xH100-80GB:mig=4g.40gb+2g.20gb+1g.10gb,8xH200-141GB", []want{
			{"H100-80GB", 2, []string{"4g.40gb", "2g.20gb", "1g.10gb"}}, {"H200-141GB", 8, nil}}},
		{"A100-40GB:mig=7g.40gb", []want{{"A100-40GB", 1, []string{"7g.40gb"}}}},
		{"16xL4-24GB", []want{{"L4-24GB", 16, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			parts, err := parseSpec(tt.spec)
			if err != nil {
				t.Fatalf("parseSpec: %v", err)
			}
			if len(parts) != len(tt.want) {
				t.Fatalf("got %d parts, want %d", len(parts), len(tt.want))
			}
			for i, p := range parts {
				var mig []string
				for _, m := range p.mig {
					mig = append(mig, m.name)
				}
				w := tt.want[i]
				if p.model.key != w.model || p.count != w.count || strings.Join(mig, "+") != strings.Join(w.mig, "+") {
					t.Errorf("part %d = %dx%s mig %v, want %dx%s mig %v", i, p.count, p.model.key, mig, w.count, w.model, w.mig)
				}
			}
		})
	}
}

func TestParseSpecRejects(t *testing.T) {
	tests := []struct {
		spec string
		want []string // every one must appear in the message
	}{
		{"", []string{"spec is empty", "2xA100-80GB"}},
		{"   ", []string{"spec is empty"}},
		{"0xA100-80GB", []string{`part 1 "0xA100-80GB"`, `count "0"`, "from 1 to 16"}},
		{"17xL4-24GB", []string{`count "17"`, "from 1 to 16"}},
		{"-1xL4-24GB", []string{`count "-1"`}},
		{"twoxL4-24GB", []string{`count "two"`}},
		{"2xFOO", []string{`part 1 "2xFOO"`, `unknown model "FOO"`, "A100-40GB", "L40S-48GB"}},
		{"2xA100", []string{`unknown model "A100"`, "A100-80GB"}},
		{"abc", []string{`part 1 "abc"`, `unknown model "abc"`, "known models"}},
		{"2xA100-80GB,,1xL4-24GB", []string{"part 2", "empty part"}},
		{"2xA100-80GB,", []string{"part 2", "empty part"}},
		{"9xL4-24GB,8xT4-16GB", []string{"17 GPUs in all", "at most 16"}},
		{"1xL4-24GB:mig=1g.5gb", []string{"L4-24GB has no MIG", "A100-40GB"}},
		{"1xA100-40GB:mig=3g.40gb", []string{`unknown MIG profile "3g.40gb" for A100-40GB`, "1g.5gb", "7g.40gb"}},
		{"1xA100-40GB:mig=", []string{`unknown MIG profile ""`}},
		{"1xA100-40GB:mig=3g.20gb++3g.20gb", []string{`unknown MIG profile ""`}},
		{"1xA100-40GB:mig=4g.20gb+4g.20gb", []string{"8 compute slices", "has 7"}},
		{"1xA100-40GB:mig=3g.20gb+3g.20gb+1g.5gb", []string{"44800 MiB", "40960 MiB"}},
		{"1xA100-40GB:fast", []string{`unknown option "fast"`, "mig=PROFILE+PROFILE"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			parts, err := parseSpec(tt.spec)
			if err == nil {
				t.Fatalf("parseSpec accepted it: %+v", parts)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("error %q does not match ErrInvalidSpec", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
