package accounting

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteCSV writes the rows of q as CSV with a header: the bucket's first day when q has
// a bucket, the key and its label when q has a dimension, the quantity when q prices one
// resource (quantities of different units do not add up), the amount with six exact
// decimals, and its currency's code.
func WriteCSV(w io.Writer, q Query, rows []Row, currency string) error {
	cw := csv.NewWriter(w)
	quantity := len(q.Resources) == 1
	var header []string
	if q.Bucket != "" {
		header = append(header, q.Bucket)
	}
	if q.By != "" {
		header = append(header, q.By+"_key", q.By)
	}
	if quantity {
		header = append(header, "quantity_"+QuantityUnit(q.Resources[0]))
	}
	header = append(header, "amount", "currency")
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	for _, r := range rows {
		var rec []string
		if q.Bucket != "" {
			rec = append(rec, r.Bucket.Format(time.DateOnly))
		}
		if q.By != "" {
			key := fmt.Sprint(r.Key)
			if r.Key == 0 {
				key = ""
			}
			rec = append(rec, key, spreadsheetSafe(r.Label))
		}
		if quantity {
			rec = append(rec, FormatMilli(r.QuantityMilli))
		}
		rec = append(rec, FormatMicros(r.AmountMicros), currency)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

// spreadsheetSafe keeps a user-chosen name (a job called "=HYPERLINK(…)") from being run
// as a formula by the spreadsheet that opens the export.
func spreadsheetSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
