// Package stats holds the few statistics spider eval reports: Wilson
// intervals for win rates, t intervals for means, McNemar's exact test for
// paired wins and the paired t-test for paired scores.
package stats
