package accounting

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// MicrosPerUnit is how many micro-units make one unit of the currency.
const MicrosPerUnit = 1_000_000

// mulDiv returns a*b*c/d rounded half away from zero, for non-negative a, b, c and a
// positive d, without overflowing: a rate times a share times seconds can pass 2^63.
func mulDiv(a, b, c, d int64) int64 {
	v, _ := mulDivFits(a, b, c, d)
	return v
}

// mulDivFits is mulDiv, and whether the result fits an int64 (else it is meaningless).
func mulDivFits(a, b, c, d int64) (int64, bool) {
	n := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	n.Mul(n, big.NewInt(c))
	n.Add(n, big.NewInt(d/2))
	n.Quo(n, big.NewInt(d))
	return n.Int64(), n.IsInt64()
}

// FormatMicros writes an amount of micro-units as a decimal with six places, exact.
func FormatMicros(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	return fmt.Sprintf("%s%d.%06d", sign, micros/MicrosPerUnit, micros%MicrosPerUnit)
}

// FormatMoney writes an amount of micro-units rounded to cents, for people.
func FormatMoney(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	cents := (micros + 5_000) / 10_000
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// FormatMilli writes a quantity in milli-units as a decimal with three places.
func FormatMilli(milli int64) string {
	sign := ""
	if milli < 0 {
		sign, milli = "-", -milli
	}
	return fmt.Sprintf("%s%d.%03d", sign, milli/1000, milli%1000)
}

// ParseMoney reads an amount of the currency written as a decimal with at most six
// places ("2.5", "-0.000125"; no thousands separators) into micro-units.
func ParseMoney(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	bad := fmt.Errorf("%q is not an amount: write a decimal number such as 2.50 (at most six decimals)", s)
	if whole == "" && frac == "" || len(frac) > 6 || len(whole) > 12 || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, bad
	}
	units, err := strconv.ParseInt("0"+whole, 10, 64)
	if err != nil {
		return 0, bad
	}
	micros, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	if err != nil {
		return 0, bad
	}
	v := units*MicrosPerUnit + micros
	if neg {
		v = -v
	}
	return v, nil
}
