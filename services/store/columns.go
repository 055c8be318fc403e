package store

import (
	"fmt"
	"time"
)

// scanDest is where database/sql should scan into the field that p points to: for
// integers, nullable integers and nullable times, a destination that takes the
// driver's value as it comes. Into an int, database/sql formats the driver's int64
// and parses it back, and into a nullable field it goes by reflection: a list reads
// a dozen such columns a row.
func scanDest(p any) any {
	switch d := p.(type) {
	case *int:
		return intColumn[int]{d}
	case *int64:
		return intColumn[int64]{d}
	case **int:
		return nullIntColumn[int]{d}
	case **int64:
		return nullIntColumn[int64]{d}
	case **time.Time:
		return nullTimeColumn{d}
	}
	return p
}

type intColumn[T ~int | ~int64] struct{ p *T }

func (c intColumn[T]) Scan(src any) error {
	n, ok := src.(int64)
	if !ok {
		return fmt.Errorf("%T is not an integer", src)
	}
	*c.p = T(n)
	return nil
}

type nullIntColumn[T ~int | ~int64] struct{ p **T }

func (c nullIntColumn[T]) Scan(src any) error {
	if src == nil {
		*c.p = nil
		return nil
	}
	n, ok := src.(int64)
	if !ok {
		return fmt.Errorf("%T is not an integer", src)
	}
	v := T(n)
	*c.p = &v
	return nil
}

type nullTimeColumn struct{ p **time.Time }

func (c nullTimeColumn) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.p = nil
	case time.Time:
		*c.p = &v
	default:
		return fmt.Errorf("%T is not a time", src)
	}
	return nil
}
