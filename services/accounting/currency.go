package accounting

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/text/currency"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// currencyKey is the setting that names the one currency every amount is in.
const currencyKey = "cost.currency"

// DefaultCurrency is the currency until an admin names another.
const DefaultCurrency = "USD"

// notMoney are the ISO 4217 codes that name no money, with what they stand for:
// amounts "in XXX" would mean nothing.
var notMoney = map[string]string{"XXX": "no currency", "XTS": "testing"}

// Currency returns the ISO 4217 code of the currency that rates, budgets and the
// ledger are in.
func (a *Accounting) Currency(ctx context.Context) (string, error) {
	v, ok, err := a.store.Setting(ctx, currencyKey)
	if err != nil {
		return "", fmt.Errorf("read the currency: %w", err)
	}
	if !ok {
		return DefaultCurrency, nil
	}
	return v, nil
}

// SetCurrency names the currency, audited with the actor of ctx, and returns its code
// as stored (upper case). Amounts are not converted: the numbers stay as they are and
// are read in the new currency.
func (a *Accounting) SetCurrency(ctx context.Context, code string) (string, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	if _, err := currency.ParseISO(code); err != nil {
		return "", models.Invalid("currency", "%.12q is not an ISO 4217 currency code: write three letters such as USD, EUR or GBP", code)
	}
	if what, ok := notMoney[code]; ok {
		return "", models.Invalid("currency", "%s is the ISO 4217 code for %s, not a currency: write one such as USD, EUR or GBP", code, what)
	}
	old, err := a.Currency(ctx)
	if err != nil || old == code {
		return code, err
	}
	return code, a.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.PutSetting(ctx, currencyKey, code); err != nil {
			return err
		}
		return a.audit.In(tx).Append(ctx, audit.Entry{Action: "cost.currency_set", ObjectType: "setting", ObjectID: currencyKey,
			Detail: map[string]string{"from": old, "to": code}})
	})
}

// FormatAmount writes an amount of micro-units rounded to cents, followed by the
// currency's code: "12.40 EUR".
func FormatAmount(micros int64, currency string) string {
	return FormatMoney(micros) + " " + currency
}
