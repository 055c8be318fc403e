package images

import "testing"

func TestCompatibility(t *testing.T) {
	cases := []struct {
		cuda, min, driver string
		want              string
	}{
		{"12.4", "", "550.54.15", CompatFull},
		{"12.4", "", "550.54.14", CompatFull},
		{"12.4.1", "", "550.54.13", CompatMinor},
		{"12.4", "", "535.104.05", CompatMinor},
		{"12.4", "", "520.61.05", CompatNone},
		{"11.8", "", "470.57.02", CompatMinor},
		{"11.8", "", "440.33.01", CompatNone},
		{"12.4", "560.0", "555.42.02", CompatNone},
		{"12.4", "550", "550.54.14", CompatFull},
		{"", "", "550.54.14", CompatUnknown},
		{"12.4", "", "", CompatUnknown},
		{"13.0", "", "580.0", CompatUnknown},
	}
	for _, c := range cases {
		got := Compatibility(c.cuda, c.min, c.driver)
		if got.Level != c.want || got.Reason == "" {
			t.Errorf("CUDA %q min %q on driver %q = %+v, want %s", c.cuda, c.min, c.driver, got, c.want)
		}
		if got.Runs() != (c.want == CompatFull || c.want == CompatMinor) {
			t.Errorf("Runs() wrong for %+v", got)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	if compareVersions("550.54.14", "550.54.14") != 0 || compareVersions("550.100", "550.54.14") != 1 || compareVersions("9", "10") != -1 {
		t.Error("numeric comparison of dotted versions is wrong")
	}
}
