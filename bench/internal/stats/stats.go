// Package stats renders the benchmark programs' figures the same way:
// quantiles of durations, rounded to what a run can tell apart, and sizes
// in MB (2^20 bytes).
package stats

import (
	"fmt"
	"slices"
	"time"
)

// Summary renders the median, the 90th and 99th percentiles and the
// extremes of ds.
func Summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("median %v  p90 %v  p99 %v  min %v  max %v",
		Round(quantile(s, 0.5)), Round(quantile(s, 0.9)), Round(quantile(s, 0.99)), Round(s[0]), Round(s[len(s)-1]))
}

// Quantile returns the p-quantile of ds.
func Quantile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return quantile(s, p)
}

// quantile is Quantile of s, which is sorted.
func quantile(s []time.Duration, p float64) time.Duration {
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// Round rounds d to three or four significant digits.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}

// MB renders b bytes in MB of 2^20 bytes.
func MB(b int64) string { return fmt.Sprintf("%.2f MB", float64(b)/(1<<20)) }
