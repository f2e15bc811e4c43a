package h2client

import (
	"encoding/binary"
	"fmt"
)

// HTTP/2 frame types, flags, settings and error codes (RFC 9113).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20

	settingHeaderTableSize   = 0x1
	settingEnablePush        = 0x2
	settingInitialWindowSize = 0x4
	settingMaxFrameSize      = 0x5

	errCodeProtocol         = 0x1
	errCodeFlowControl      = 0x3
	errCodeFrameSize        = 0x6
	errCodeRefusedStream    = 0x7
	errCodeCancel           = 0x8
	errCodeEnhanceYourCalm  = 0xb
	errCodeInadequateSecure = 0xc

	frameHeaderLen = 9
	// maxFrameSize is the largest frame payload the client accepts: the protocol's default,
	// which it does not raise.
	maxFrameSize = 1 << 14
	// defaultWindow is the flow-control window every stream and connection starts with.
	defaultWindow = 65535
	maxWindow     = 1<<31 - 1
)

const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// frameHeader is a parsed frame header.
type frameHeader struct {
	length int
	typ    byte
	flags  byte
	stream uint32
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length: int(b[0])<<16 | int(b[1])<<8 | int(b[2]),
		typ:    b[3],
		flags:  b[4],
		stream: binary.BigEndian.Uint32(b[5:9]) & 0x7fffffff,
	}
}

func appendFrameHeader(dst []byte, length int, typ, flags byte, stream uint32) []byte {
	return append(dst, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
}

func appendSettings(dst []byte, window uint32) []byte {
	dst = appendFrameHeader(dst, 12, frameSettings, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, settingEnablePush)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint16(dst, settingInitialWindowSize)
	return binary.BigEndian.AppendUint32(dst, window)
}

func appendWindowUpdate(dst []byte, stream, inc uint32) []byte {
	dst = appendFrameHeader(dst, 4, frameWindowUpdate, 0, stream)
	return binary.BigEndian.AppendUint32(dst, inc)
}

func appendRSTStream(dst []byte, stream, code uint32) []byte {
	dst = appendFrameHeader(dst, 4, frameRSTStream, 0, stream)
	return binary.BigEndian.AppendUint32(dst, code)
}

// connError is a connection error: the peer broke the protocol.
type connError struct {
	code uint32
	msg  string
}

func (e connError) Error() string {
	return fmt.Sprintf("http2: connection error %d: %s", e.code, e.msg)
}

func protocolError(format string, args ...any) error {
	return connError{code: errCodeProtocol, msg: fmt.Sprintf(format, args...)}
}

// unpad strips a padded frame's pad length byte and padding.
func unpad(h frameHeader, p []byte) ([]byte, error) {
	if h.flags&flagPadded == 0 {
		return p, nil
	}
	if len(p) < 1 {
		return nil, protocolError("padded frame of type %d without its pad length", h.typ)
	}
	pad := int(p[0])
	if pad > len(p)-1 {
		return nil, protocolError("frame of type %d: padding %d longer than its payload %d", h.typ, pad, len(p)-1)
	}
	return p[1 : len(p)-pad], nil
}
