package jobs

import (
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JobUsage is what a finished job consumed and what it cost, shown as
// attributes.usage (docs/api.md, Usage and cost).
type JobUsage struct {
	// Unit is the pricing unit the quantity is in: minute, character,
	// page, request or token.
	Unit     string      `json:"unit"`
	Quantity float64     `json:"quantity"`
	Native   NativeUsage `json:"native"`
	// Estimated: the provider reported no count; the gateway estimated it.
	Estimated    bool   `json:"estimated,omitempty"`
	Cost         Cost   `json:"cost"`
	PriceVersion string `json:"price_version"`
}

// NativeUsage is a job's usage in its service's own units; members not
// measured are nil.
type NativeUsage struct {
	MediaSeconds *float64 `json:"media_seconds,omitempty"`
	Characters   *int64   `json:"characters,omitempty"`
	Pages        *int64   `json:"pages,omitempty"`
	InputTokens  *int64   `json:"input_tokens,omitempty"`
	OutputTokens *int64   `json:"output_tokens,omitempty"`
}

// Cost is an amount of money in nanos (1e-9 of the currency), exact; it
// is shown as {"amount": <decimal number>, "currency"}.
type Cost struct {
	Nanos    int64
	Currency string
}

type costJSON struct {
	Amount   json.Number `json:"amount"`
	Currency string      `json:"currency"`
}

// MarshalJSON shows the amount as a decimal number with no float noise.
func (c Cost) MarshalJSON() ([]byte, error) {
	return json.Marshal(costJSON{Amount: json.Number(NanosDecimal(c.Nanos)), Currency: c.Currency})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *Cost) UnmarshalJSON(data []byte) error {
	var v costJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	r, ok := new(big.Rat).SetString(string(v.Amount))
	if !ok {
		return errors.New("cost amount is not a number")
	}
	n := new(big.Rat).Mul(r, big.NewRat(1e9, 1))
	if !n.IsInt() || !n.Num().IsInt64() {
		return errors.New("cost amount has more than 9 decimals")
	}
	c.Nanos, c.Currency = n.Num().Int64(), v.Currency
	return nil
}

// NanosDecimal writes nanos as a decimal amount: 100000 is "0.0001".
func NanosDecimal(nanos int64) string {
	neg := nanos < 0
	u := uint64(nanos)
	if neg {
		u = -u
	}
	s := strconv.FormatUint(u/1e9, 10)
	if frac := u % 1e9; frac != 0 {
		s += "." + strings.TrimRight(strconv.FormatUint(frac+1e9, 10)[1:], "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MeasureUsage reads what a completed job consumed from its input and
// result, in its service's native units (docs/api.md, Usage and cost):
// media seconds from the result's duration or video_metadata.duration,
// characters of a text translation's content (code points) or a
// document's character_count, and the tokens the provider reported. An
// llm-task whose provider reported no tokens is estimated at four
// characters a token (estimated true).
func MeasureUsage(service ServiceID, input, result json.RawMessage) (n NativeUsage, estimated bool) {
	var res struct {
		Duration       *float64 `json:"duration"`
		CharacterCount *int64   `json:"character_count"`
		PageCount      *int64   `json:"page_count"`
		Content        string   `json:"content"`
		VideoMetadata  *struct {
			Duration float64 `json:"duration"`
		} `json:"video_metadata"`
		Usage *Usage `json:"usage"`
	}
	_ = json.Unmarshal(result, &res)
	var in struct {
		Type         string       `json:"type"`
		Content      string       `json:"content"`
		Text         string       `json:"text"`
		Prompt       string       `json:"prompt"`
		SystemPrompt string       `json:"system_prompt"`
		Messages     []LLMMessage `json:"messages"`
	}
	_ = json.Unmarshal(input, &in)
	if res.Usage != nil {
		if res.Usage.InputTokens != nil {
			n.InputTokens = int64p(int64(*res.Usage.InputTokens))
		}
		if res.Usage.OutputTokens != nil {
			n.OutputTokens = int64p(int64(*res.Usage.OutputTokens))
		}
	}
	svc, _ := ServiceOf(service)
	switch svc.Usage {
	case UsageAudioSeconds:
		if res.Duration != nil {
			n.MediaSeconds = res.Duration
		}
	case UsageVideoSeconds:
		if res.VideoMetadata != nil {
			n.MediaSeconds = &res.VideoMetadata.Duration
		}
	case UsageCharacters:
		if in.Type == "text" {
			n.Characters = int64p(int64(utf8.RuneCountInString(in.Content)))
		} else if res.CharacterCount != nil {
			n.Characters = res.CharacterCount
		}
		n.Pages = res.PageCount
	case UsageTokens:
		if n.InputTokens == nil {
			chars := utf8.RuneCountInString(in.Prompt + in.SystemPrompt + in.Text)
			for _, m := range in.Messages {
				chars += utf8.RuneCountInString(m.Content)
			}
			n.InputTokens, estimated = int64p(int64((chars+3)/4)), true
		}
		if n.OutputTokens == nil {
			n.OutputTokens, estimated = int64p(int64((utf8.RuneCountInString(res.Content)+3)/4)), true
		}
	}
	return n, estimated
}

func int64p(v int64) *int64 { return &v }
