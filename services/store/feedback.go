package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/models"
)

// CreateFeedbackItem inserts a new feedback item.
func (s *Store) CreateFeedbackItem(ctx context.Context, it *models.FeedbackItem) error {
	if err := translate(s.with(ctx).Create(it).Error); err != nil {
		return fmt.Errorf("create feedback item: %w", err)
	}
	return nil
}

// FeedbackItemByID returns the item with id.
func (s *Store) FeedbackItemByID(ctx context.Context, id int64) (*models.FeedbackItem, error) {
	var it models.FeedbackItem
	if err := translate(s.with(ctx).First(&it, id).Error); err != nil {
		return nil, fmt.Errorf("feedback item %d: %w", id, err)
	}
	return &it, nil
}

// FeedbackFilter selects items of the board; zero fields select everything. Offset
// skips the first items, for a page after the first.
type FeedbackFilter struct {
	Statuses []string
	Category string
	ByVotes  bool // most votes first; else newest first
	Offset   int
	Limit    int
}

// feedbackOf is the query of the items f selects, order and page aside.
func (s *Store) feedbackOf(ctx context.Context, f FeedbackFilter) *gorm.DB {
	q := s.with(ctx).Model(&models.FeedbackItem{})
	if len(f.Statuses) > 0 {
		q = q.Where("status IN ?", f.Statuses)
	}
	if f.Category != "" {
		q = q.Where("category = ?", f.Category)
	}
	return q
}

// CountFeedbackItems returns how many items f selects, page aside.
func (s *Store) CountFeedbackItems(ctx context.Context, f FeedbackFilter) (int, error) {
	var n int64
	if err := s.feedbackOf(ctx, f).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count feedback: %w", err)
	}
	return int(n), nil
}

// FeedbackItems returns the items matching f.
func (s *Store) FeedbackItems(ctx context.Context, f FeedbackFilter) ([]models.FeedbackItem, error) {
	q := s.feedbackOf(ctx, f).Offset(f.Offset)
	if f.ByVotes {
		q = q.Order("vote_count DESC, id DESC")
	} else {
		q = q.Order("id DESC")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []models.FeedbackItem
	if err := q.Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list feedback: %w", err)
	}
	return out, nil
}

// UpdateFeedbackItem saves every field of it.
func (s *Store) UpdateFeedbackItem(ctx context.Context, it *models.FeedbackItem) error {
	if err := translate(s.with(ctx).Save(it).Error); err != nil {
		return fmt.Errorf("update feedback item %d: %w", it.ID, err)
	}
	return nil
}

// AddFeedbackVote records a user's vote and counts it; a second vote is ErrConflict.
func (s *Store) AddFeedbackVote(ctx context.Context, itemID, userID int64) error {
	err := s.InTx(ctx, func(tx *Store) error {
		if err := translate(tx.with(ctx).Create(&models.FeedbackVote{ItemID: itemID, UserID: userID}).Error); err != nil {
			return err
		}
		return tx.with(ctx).Model(&models.FeedbackItem{}).Where("id = ?", itemID).
			Update("vote_count", gorm.Expr("vote_count + 1")).Error
	})
	if err != nil {
		return fmt.Errorf("vote on feedback item %d: %w", itemID, err)
	}
	return nil
}

// RemoveFeedbackVote withdraws a user's vote; without one it is ErrNotFound.
func (s *Store) RemoveFeedbackVote(ctx context.Context, itemID, userID int64) error {
	err := s.InTx(ctx, func(tx *Store) error {
		res := tx.with(ctx).Where("item_id = ? AND user_id = ?", itemID, userID).Delete(&models.FeedbackVote{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return ErrNotFound
		}
		return tx.with(ctx).Model(&models.FeedbackItem{}).Where("id = ?", itemID).
			Update("vote_count", gorm.Expr("vote_count - 1")).Error
	})
	if err != nil {
		return fmt.Errorf("withdraw vote on feedback item %d: %w", itemID, err)
	}
	return nil
}

// HasFeedbackVote reports whether the user voted for the item.
func (s *Store) HasFeedbackVote(ctx context.Context, itemID, userID int64) (bool, error) {
	var n int64
	if err := s.with(ctx).Model(&models.FeedbackVote{}).Where("item_id = ? AND user_id = ?", itemID, userID).Count(&n).Error; err != nil {
		return false, fmt.Errorf("vote of user %d on item %d: %w", userID, itemID, err)
	}
	return n > 0, nil
}

// CreateFeedbackComment inserts a reply on an item.
func (s *Store) CreateFeedbackComment(ctx context.Context, c *models.FeedbackComment) error {
	if err := translate(s.with(ctx).Create(c).Error); err != nil {
		return fmt.Errorf("comment on feedback item %d: %w", c.ItemID, err)
	}
	return nil
}

// FeedbackComments returns the replies on an item, oldest first.
func (s *Store) FeedbackComments(ctx context.Context, itemID int64) ([]models.FeedbackComment, error) {
	var out []models.FeedbackComment
	if err := s.with(ctx).Where("item_id = ?", itemID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("comments on feedback item %d: %w", itemID, err)
	}
	return out, nil
}

// FeedbackCount is how many items one category has in one status.
type FeedbackCount struct {
	Category string
	Status   string
	N        int
}

// FeedbackCounts returns the number of items per category and status.
func (s *Store) FeedbackCounts(ctx context.Context) ([]FeedbackCount, error) {
	var out []FeedbackCount
	err := s.with(ctx).Model(&models.FeedbackItem{}).Select("category, status, COUNT(*) AS n").
		Group("category, status").Order("category, status").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("count feedback: %w", err)
	}
	return out, nil
}

// UnansweredFeedback returns the oldest items nobody answered yet.
func (s *Store) UnansweredFeedback(ctx context.Context, limit int) ([]models.FeedbackItem, error) {
	var out []models.FeedbackItem
	if err := s.with(ctx).Where("answered_at IS NULL").Order("id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("unanswered feedback: %w", err)
	}
	return out, nil
}

// CreateNotification inserts an in-portal message for a user.
func (s *Store) CreateNotification(ctx context.Context, n *models.Notification) error {
	if err := translate(s.with(ctx).Create(n).Error); err != nil {
		return fmt.Errorf("notify user %d: %w", n.UserID, err)
	}
	return nil
}

// NotificationsOfUser returns a user's newest notifications.
func (s *Store) NotificationsOfUser(ctx context.Context, userID int64, limit int) ([]models.Notification, error) {
	var out []models.Notification
	if err := s.with(ctx).Where("user_id = ?", userID).Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("notifications of user %d: %w", userID, err)
	}
	return out, nil
}

// MarkNotificationRead marks one of the user's notifications read.
func (s *Store) MarkNotificationRead(ctx context.Context, userID, id int64, at time.Time) error {
	res := s.with(ctx).Model(&models.Notification{}).Where("id = ? AND user_id = ? AND read_at IS NULL", id, userID).Update("read_at", at)
	if res.Error != nil {
		return fmt.Errorf("mark notification %d read: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("notification %d of user %d: %w", id, userID, ErrNotFound)
	}
	return nil
}
