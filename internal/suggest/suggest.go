package suggest

import (
	"strconv"
	"strings"
)

// Distance is the optimal-string-alignment distance between a and b, case-insensitive: an
// insertion, a deletion, a substitution or a transposition of two neighbours ("mena" for
// "mean") each cost 1.
func Distance(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	// Three rows suffice: the transposition looks two rows back.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Nearest returns the candidate s was most likely meant to be: one equal to it but for case
// first, else the closest within a third of s's length (at least 2 edits); "" when none is
// close enough to be a typo. Ties go to the earlier candidate.
func Nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if strings.EqualFold(c, s) {
			return c
		}
		if d := Distance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(2, len([]rune(s))/3) {
		return ""
	}
	return best
}

// Hint is " (did you mean "n"?)" for the candidate n nearest to s, or "" when none is near or s
// is itself a candidate: the suffix a message about a misspelt name ends with.
func Hint(s string, candidates []string) string {
	if n := Nearest(s, candidates); n != "" && n != s {
		return " (did you mean " + strconv.Quote(n) + "?)"
	}
	return ""
}

// Fix is the fix for a value that is not one of candidates: "did you mean "n"?" for the
// nearest, or "use one of: …" listing them all when none is near.
func Fix(s string, candidates []string) string {
	if n := Nearest(s, candidates); n != "" {
		return "did you mean " + strconv.Quote(n) + "?"
	}
	return "use one of: " + strings.Join(candidates, ", ")
}
