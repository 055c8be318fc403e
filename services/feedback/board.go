package feedback

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Board lists items for everyone to see: open ones by votes unless f says otherwise.
func (s *Service) Board(ctx context.Context, f store.FeedbackFilter) ([]models.FeedbackItem, error) {
	return s.store.FeedbackItems(ctx, f)
}

// BoardSize is how many items f selects, page aside.
func (s *Service) BoardSize(ctx context.Context, f store.FeedbackFilter) (int, error) {
	return s.store.CountFeedbackItems(ctx, f)
}

// Stats is what admins triage from.
type Stats struct {
	Counts     []store.FeedbackCount
	Unanswered []models.FeedbackItem // oldest first
}

// Stats returns counts per category and status and the oldest unanswered items.
func (s *Service) Stats(ctx context.Context, oldest int) (Stats, error) {
	counts, err := s.store.FeedbackCounts(ctx)
	if err != nil {
		return Stats{}, err
	}
	un, err := s.store.UnansweredFeedback(ctx, oldest)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Counts: counts, Unanswered: un}, nil
}

// ExportCSV writes every item matching f as CSV with a header row.
func (s *Service) ExportCSV(ctx context.Context, w io.Writer, f store.FeedbackFilter) error {
	items, err := s.store.FeedbackItems(ctx, f)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"id", "created_at", "user_id", "category", "status", "votes", "title", "body", "page", "answer", "answered_at"}); err != nil {
		return fmt.Errorf("export feedback: %w", err)
	}
	for _, it := range items {
		answered := ""
		if it.AnsweredAt != nil {
			answered = it.AnsweredAt.UTC().Format(time.RFC3339)
		}
		row := []string{
			strconv.FormatInt(it.ID, 10), it.CreatedAt.UTC().Format(time.RFC3339), strconv.FormatInt(it.UserID, 10),
			it.Category, it.Status, strconv.Itoa(it.VoteCount), csvSafe(it.Title), csvSafe(it.Body), it.Page, csvSafe(it.Answer), answered,
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("export feedback: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe defuses formula injection: a cell a spreadsheet would evaluate starts with a quote.
func csvSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}
