package media

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Tools are the media programs the gateway runs.
type Tools struct {
	FFmpeg  string
	FFprobe string
}

// FindTools looks ffmpeg and ffprobe up on PATH; the error names what is
// missing and how to install it.
func FindTools() (Tools, error) {
	var t Tools
	var missing []string
	var err error
	if t.FFmpeg, err = exec.LookPath("ffmpeg"); err != nil {
		missing = append(missing, "ffmpeg")
	}
	if t.FFprobe, err = exec.LookPath("ffprobe"); err != nil {
		missing = append(missing, "ffprobe")
	}
	if len(missing) > 0 {
		return Tools{}, fmt.Errorf("%s not found on PATH: install ffmpeg (Debian or Ubuntu: apt-get install ffmpeg, or make engines)", strings.Join(missing, " and "))
	}
	return t, nil
}

// Probe is what ffprobe tells of a media file.
type Probe struct {
	Format   string   `json:"format"`   // ffprobe's format_name
	Duration float64  `json:"duration"` // seconds
	Streams  []Stream `json:"streams"`
}

// Stream is one stream of a media file.
type Stream struct {
	Index      int     `json:"index"`
	Type       string  `json:"type"` // audio, video, subtitle, data
	Codec      string  `json:"codec"`
	Width      int     `json:"width,omitempty"`
	Height     int     `json:"height,omitempty"`
	FrameRate  float64 `json:"frame_rate,omitempty"`
	Channels   int     `json:"channels,omitempty"`
	SampleRate int     `json:"sample_rate,omitempty"`
	// Picture marks an attached picture (cover art), not a video.
	Picture bool `json:"picture,omitempty"`
}

// AudioStreams are the audio streams, in file order: input.audio_track
// counts among them.
func (p Probe) AudioStreams() []Stream {
	var out []Stream
	for _, s := range p.Streams {
		if s.Type == "audio" {
			out = append(out, s)
		}
	}
	return out
}

// Video is the first video stream that is not an attached picture.
func (p Probe) Video() (Stream, bool) {
	for _, s := range p.Streams {
		if s.Type == "video" && !s.Picture {
			return s, true
		}
	}
	return Stream{}, false
}

// VideoMetadata is the result's video_metadata; false without a video.
func (p Probe) VideoMetadata() (*jobs.VideoMetadata, bool) {
	v, ok := p.Video()
	if !ok {
		return nil, false
	}
	return &jobs.VideoMetadata{
		Duration:  p.Duration,
		Width:     v.Width,
		Height:    v.Height,
		FrameRate: v.FrameRate,
		Format:    shortFormat(p.Format),
		Codec:     v.Codec,
	}, true
}

// shortFormat names a container the way users do: ffprobe calls an MP4
// "mov,mp4,m4a,3gp,3g2,mj2" and a WebM "matroska,webm".
func shortFormat(name string) string {
	switch {
	case strings.Contains(name, "mp4"):
		return "mp4"
	case strings.Contains(name, "webm"):
		return "webm"
	}
	first, _, _ := strings.Cut(name, ",")
	return first
}

// demuxers are the container formats the gateway opens: audio and video
// files. Playlists and other formats that point ffmpeg at further files
// or URLs (hls, dash, concat, image sequences) are not among them, so a
// "video" cannot make the worker read its own files or reach its network.
const demuxers = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,flv,mpegts,mpeg,mpegvideo,ogg,wav,w64,mp3,flac,aac,asf,nut,aiff,caf,amr,dv,mxf,wv,ape,h264,hevc,ivf,m4v"

// InputArgs are the ffmpeg/ffprobe arguments that open the local media
// file at path, and nothing else (docs/media.md, Safety).
func InputArgs(path string) []string {
	return []string{"-protocol_whitelist", "file", "-format_whitelist", demuxers, "-i", path}
}

// probeTimeout bounds one ffprobe run: it reads headers, not the media.
const probeTimeout = 2 * time.Minute

// Probe runs ffprobe on path. A file ffprobe cannot read, or one with no
// audio and no video, is a non-retryable *Error with UnreadableCode(s).
func (t Tools) Probe(ctx context.Context, s jobs.ServiceID, path string) (Probe, error) {
	limited, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	args := append([]string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams"}, InputArgs(path)...)
	out, stderr, err := run(limited, t.FFprobe, args...)
	if err != nil {
		if ctx.Err() != nil {
			return Probe{}, ctx.Err()
		}
		if limited.Err() != nil {
			return Probe{}, retryable(jobs.CodeMediaUnavailable, "ffprobe took too long to read the media", limited.Err())
		}
		return Probe{}, inputError(UnreadableCode(s), "the media cannot be read"+reason(stderr), nil)
	}
	var raw struct {
		Format struct {
			FormatName string `json:"format_name"`
			Duration   string `json:"duration"`
		} `json:"format"`
		Streams []struct {
			Index        int    `json:"index"`
			CodecType    string `json:"codec_type"`
			CodecName    string `json:"codec_name"`
			Width        int    `json:"width"`
			Height       int    `json:"height"`
			AvgFrameRate string `json:"avg_frame_rate"`
			RFrameRate   string `json:"r_frame_rate"`
			Channels     int    `json:"channels"`
			SampleRate   string `json:"sample_rate"`
			Disposition  struct {
				AttachedPic int `json:"attached_pic"`
			} `json:"disposition"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return Probe{}, inputError(UnreadableCode(s), "the media cannot be read: ffprobe's answer is not understood", err)
	}
	p := Probe{Format: raw.Format.FormatName}
	p.Duration, _ = strconv.ParseFloat(raw.Format.Duration, 64)
	for _, rs := range raw.Streams {
		st := Stream{Index: rs.Index, Type: rs.CodecType, Codec: rs.CodecName, Width: rs.Width, Height: rs.Height,
			Channels: rs.Channels, Picture: rs.Disposition.AttachedPic == 1}
		st.SampleRate, _ = strconv.Atoi(rs.SampleRate)
		if st.FrameRate = rate(rs.AvgFrameRate); st.FrameRate == 0 {
			st.FrameRate = rate(rs.RFrameRate)
		}
		if st.Type != "video" {
			st.FrameRate = 0
		}
		p.Streams = append(p.Streams, st)
	}
	_, hasVideo := p.Video()
	if !hasVideo && len(p.AudioStreams()) == 0 {
		return Probe{}, inputError(UnreadableCode(s), "the media has neither audio nor video (is input.url a media file?)", nil)
	}
	return p, nil
}

// rate parses a frame rate such as "30000/1001" or "25/1"; 0 when unknown.
func rate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	if !ok {
		return n
	}
	d, err := strconv.ParseFloat(den, 64)
	if err != nil || d == 0 {
		return 0
	}
	return float64(int(n/d*1000+0.5)) / 1000
}

// stderrLimit is how much of a program's error output is kept: its last
// lines say what went wrong.
const stderrLimit = 4 << 10

// run runs a media program; it returns its output and the tail of its
// error output.
func run(ctx context.Context, name string, args ...string) (stdout []byte, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	tail := &tailBuffer{limit: stderrLimit}
	cmd.Stdout, cmd.Stderr = &out, tail
	err = cmd.Run()
	return out.Bytes(), tail.String(), err
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	buf   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }

// reason is " (ffmpeg: " + ErrorLine(stderr) + ")", or "" when ffmpeg
// said nothing.
func reason(stderr string) string {
	last := ErrorLine(stderr)
	if last == "" {
		return ""
	}
	return " (ffmpeg: " + last + ")"
}

// ErrorLine is the last line of a media program's error output, without
// the local path ffmpeg puts in front of its messages ("/tmp/x/source:
// Invalid data ..."), so it can be shown to users.
func ErrorLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if i := strings.LastIndex(last, ": "); i >= 0 && strings.Contains(last[:i], "/") {
		last = last[i+2:]
	}
	return last
}
