package accounting_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The currency is USD until an admin names another ISO 4217 code; a change is
// audited once, and bad codes are refused naming the field, changing nothing.
func TestCurrency(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		cur, err := w.acc.Currency(w.ctx)
		if err != nil || cur != "USD" {
			t.Fatalf("Currency = %q, %v; want USD before any is named", cur, err)
		}
		for _, bad := range []string{"", "EU", "EURO", "XYZ", "€", "U$D", strings.Repeat("E", 1<<20), "\xff\xfeD", "XXX", "xts"} {
			_, err := w.acc.SetCurrency(w.ctx, bad)
			var fe *models.FieldError
			if !errors.As(err, &fe) || fe.Field != "currency" || !strings.Contains(fe.Message, "ISO 4217") || len(fe.Message) > 120 {
				t.Errorf("SetCurrency(%q) = %v; want refused on field currency", bad, err)
			}
		}
		if cur, _ := w.acc.Currency(w.ctx); cur != "USD" {
			t.Errorf("after refused codes the currency is %q", cur)
		}
		for _, typed := range []string{" eur ", "EUR"} {
			if set, err := w.acc.SetCurrency(w.ctx, typed); err != nil || set != "EUR" {
				t.Errorf("SetCurrency(%q) = %q, %v; want EUR", typed, set, err)
			}
		}
		if cur, _ := w.acc.Currency(w.ctx); cur != "EUR" {
			t.Errorf("Currency = %q after naming eur, want EUR", cur)
		}
		if got := w.audited("cost.currency"); got != "cost.currency_set:system" {
			t.Errorf("audited %q, want one change (naming the same currency again is none)", got)
		}
		if got := accounting.FormatAmount(12_404_999, "EUR"); got != "12.40 EUR" {
			t.Errorf("FormatAmount = %q", got)
		}
	})
}
