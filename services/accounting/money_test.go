package accounting_test

import (
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/services/accounting"
)

func TestParseMoney(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"2.5": 2_500_000, "0.000125": 125, "-1": -1_000_000, " 12 ": 12_000_000, ".5": 500_000, "3.": 3_000_000, "0": 0} {
		if got, err := accounting.ParseMoney(in); err != nil || got != want {
			t.Errorf("ParseMoney(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", ".", "1,200.00", "1.0000001", "2.50 EUR", "1e3", "--1", "9999999999999", "0x10"} {
		if got, err := accounting.ParseMoney(in); err == nil || !strings.Contains(err.Error(), "is not an amount") {
			t.Errorf("ParseMoney(%q) = %d, %v; want refused", in, got, err)
		}
	}
}
