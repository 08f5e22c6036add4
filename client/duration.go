package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ebb-data/ebb/internal/durfmt"
)

// duration is a time.Duration as the API writes it: a Go duration string
// without trailing zero units ("168h", "90s", "0s").
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(FormatDuration(time.Duration(d)))
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"168h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = duration(v)
	return nil
}

// FormatDuration writes d as the API does: a Go duration string without
// trailing zero units, "168h" rather than "168h0m0s".
func FormatDuration(d time.Duration) string { return durfmt.Format(d) }
