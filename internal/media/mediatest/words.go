package mediatest

import "strings"

// Words lowercases text and splits it into words, punctuation dropped.
func Words(text string) []string {
	return strings.Fields(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'' || r == ' ' {
			return r
		}
		return ' '
	}, strings.ToLower(text)))
}

// WordErrors is the word-level edit distance between a reference and a
// hypothesis (their Words), and the reference's length: errs/words is the
// word error rate.
func WordErrors(reference, hypothesis string) (errs, words int) {
	ref, hyp := Words(reference), Words(hypothesis)
	prev := make([]int, len(hyp)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ref); i++ {
		cur := make([]int, len(hyp)+1)
		cur[0] = i
		for j := 1; j <= len(hyp); j++ {
			sub := prev[j-1]
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(hyp)], len(ref)
}
