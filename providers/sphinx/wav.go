package sphinx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// sampleRate is the rate of the audio the media stage extracts and the
// rate of the en-us acoustic model (docs/media.md).
const sampleRate = 16000

// pcm is a 16 kHz mono 16-bit PCM WAV file, read in place: the adapter
// never holds more of it than a second of samples and a chunk's pipe
// buffer, so memory stays flat whatever the length.
type pcm struct {
	f       *os.File
	data    int64 // offset of the first sample
	samples int64
}

// errNotWAV is a file that is not a readable WAV file.
var errNotWAV = errors.New("not a WAV file")

// errNotPCM is a WAV file in another format than the one the media stage
// writes.
var errNotPCM = errors.New("not 16 kHz mono 16-bit PCM")

// openPCM opens a WAV file and finds its samples. A file that is no WAV
// fails with errNotWAV, a WAV that is not 16 kHz mono 16-bit PCM with
// errNotPCM (both wrapped).
func openPCM(path string) (*pcm, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	p, err := readHeader(f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return p, nil
}

func readHeader(f *os.File) (*pcm, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var riff [12]byte
	if _, err := io.ReadFull(f, riff[:]); err != nil || string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return nil, fmt.Errorf("%w: no RIFF/WAVE header", errNotWAV)
	}
	pos := int64(12)
	sawFormat := false
	for {
		var head [8]byte
		if _, err := f.ReadAt(head[:], pos); err != nil {
			return nil, fmt.Errorf("%w: no data chunk", errNotWAV)
		}
		id, size := string(head[0:4]), int64(binary.LittleEndian.Uint32(head[4:8]))
		pos += 8
		switch id {
		case "fmt ":
			var fmtChunk [16]byte
			if size < 16 {
				return nil, fmt.Errorf("%w: short fmt chunk", errNotWAV)
			}
			if _, err := f.ReadAt(fmtChunk[:], pos); err != nil {
				return nil, fmt.Errorf("%w: short fmt chunk", errNotWAV)
			}
			tag := binary.LittleEndian.Uint16(fmtChunk[0:2])
			channels := binary.LittleEndian.Uint16(fmtChunk[2:4])
			rate := binary.LittleEndian.Uint32(fmtChunk[4:8])
			bits := binary.LittleEndian.Uint16(fmtChunk[14:16])
			if (tag != 1 && tag != 0xFFFE) || channels != 1 || rate != sampleRate || bits != 16 {
				return nil, fmt.Errorf("%w: format %d, %d channels, %d Hz, %d bits", errNotPCM, tag, channels, rate, bits)
			}
			sawFormat = true
		case "data":
			if !sawFormat {
				return nil, fmt.Errorf("%w: data before fmt", errNotWAV)
			}
			// A WAV written to a pipe has no size (0 or 0xFFFFFFFF): the
			// samples run to the end of the file.
			if size == 0 || pos+size > info.Size() {
				size = info.Size() - pos
			}
			return &pcm{f: f, data: pos, samples: size / 2}, nil
		}
		pos += size + size%2
	}
}

// Close closes the file.
func (p *pcm) Close() error { return p.f.Close() }

// seconds is the length of n samples.
func seconds(n int64) float64 { return float64(n) / sampleRate }

// section is the bytes of samples [from, to).
func (p *pcm) section(from, to int64) *io.SectionReader {
	return io.NewSectionReader(p.f, p.data+2*from, 2*(to-from))
}

// Chunking (docs/providers.md, sphinx): a chunk ends at the quietest
// stretch of the last part of its longest length, so the recognizer never
// starts or stops in a word when there is a pause to cut at.
const (
	frameSamples = sampleRate / 100 // 10 ms
	quietFrames  = 30               // a 300 ms stretch
)

// nextCut is where the chunk starting at start ends: the end of the audio
// when it is within maxLen, else the middle of the quietest 300 ms between
// maxLen/2 and maxLen (the latest, of several equally quiet).
func (p *pcm) nextCut(start, maxLen int64) (int64, error) {
	if p.samples-start <= maxLen {
		return p.samples, nil
	}
	from := start + maxLen/2
	frames := int((maxLen - maxLen/2) / frameSamples)
	if frames < quietFrames {
		return start + maxLen, nil
	}
	// The energies are read a block of frames at a time: the search
	// holds 8 bytes a frame, not the samples.
	energy := make([]int64, frames)
	section := p.section(from, from+int64(frames*frameSamples))
	buf := make([]byte, 100*frameSamples*2)
	for i := 0; i < frames; {
		n := min(frames-i, 100)
		block := buf[:n*frameSamples*2]
		if _, err := io.ReadFull(section, block); err != nil {
			return 0, err
		}
		for k := range n {
			var e int64
			for j := range frameSamples {
				s := int64(int16(binary.LittleEndian.Uint16(block[2*(k*frameSamples+j):])))
				e += s * s
			}
			energy[i+k] = e
		}
		i += n
	}
	var sum int64
	for i := 0; i < quietFrames; i++ {
		sum += energy[i]
	}
	best, bestAt := sum, 0
	for i := quietFrames; i < frames; i++ {
		sum += energy[i] - energy[i-quietFrames]
		if sum <= best { // the latest of equally quiet stretches: chunks as long as they may be
			best, bestAt = sum, i-quietFrames+1
		}
	}
	return from + int64(bestAt+quietFrames/2)*frameSamples, nil
}
