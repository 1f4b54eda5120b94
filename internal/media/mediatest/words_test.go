package mediatest

import "testing"

func TestWordErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		reference, hypothesis string
		errs, words           int
	}{
		{"The quick brown fox.", "the quick brown fox", 0, 4},
		{"Thank you very much for your help.", "thank you much for the help", 2, 7}, // a deletion, a substitution
		{"Please call me.", "please please call me now", 2, 3},                      // two insertions
		{"Hello", "", 1, 1},
	} {
		errs, words := WordErrors(c.reference, c.hypothesis)
		if errs != c.errs || words != c.words {
			t.Errorf("WordErrors(%q, %q) = %d, %d; want %d, %d", c.reference, c.hypothesis, errs, words, c.errs, c.words)
		}
	}
}
