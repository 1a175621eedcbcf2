// Package redact hides secrets in text that weir prints: error messages,
// logs, plans and SQL excerpts. One set of rules serves every caller, so
// that a password form hidden in one place is hidden everywhere.
//
// Forms recognised:
//
//   - a URL's user-info password: postgres://user:secret@host/db
//     (also with an unescaped @ in it: postgres://user:se@cret@host/db)
//   - a sensitive query parameter: ...?password=secret&sslmode=off
//   - a key=value DSN pair: host=h password=secret (also quoted: 'it”s')
//   - a JAAS option: password="secret" (Kafka's sasl.jaas.config)
//   - a SQL WITH option whose key is sensitive:
//     'properties.sasl.jaas.config' = '...'
//
// A key is sensitive when it names a password, secret, token, credential,
// JAAS configuration or private key (see SensitiveKey).
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every secret this package hides.
const Mask = "xxxxx"

// SensitiveKey reports whether an option or parameter key names a secret:
// it contains password, passwd, pwd, secret, token, credential,
// jaas.config, user-info, userinfo, or ends in .key / key.pem (a private
// key in PEM form), matched without regard to case.
func SensitiveKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"password", "passwd", "pwd", "secret", "token", "credential", "jaas.config", "jaas", "user-info", "userinfo", "private"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return strings.HasSuffix(k, ".key") || strings.HasSuffix(k, "key.pem") || strings.HasSuffix(k, "keystore.key")
}

var (
	// scheme://user:password@ — the password is everything up to the
	// last @ before the host (passwords may contain @ only escaped).
	urlUserInfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s]*:)([^@/?#\s]*)@`)
	// key=value (DSN words and URL query parameters), value quoted with
	// ' or " or bare up to whitespace, & or ;.
	keyValue = regexp.MustCompile(`(?i)([a-z0-9_.\-]+)(\s*=\s*)('(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.)*"|[^\s&;'",)]+)`)
	// scheme://user:pa@ss@host — a password with an unescaped @, which
	// url.Parse (and so pgx) accepts: the user-info ends at the last @
	// of the authority, before the first /, ?, # or whitespace.
	urlUserInfoLastAt = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s]*:)[^/?#\s]*@[^/?#\s]*@`)
	// key=\"value\": a double-quoted value inside a Go-quoted string
	// (strconv.Quote, %q: a SQL error quoting a token), possibly cut
	// short ("..." and the closing quote) by the one who quoted it.
	keyEscapedQuoted = regexp.MustCompile(`(?i)([a-z0-9_.\-]+)(\s*=\s*)\\"(?:[^"\\]|\\[^"])*(?:\\"|"|$)`)
	// SQL option: 'key' = 'value' (value a SQL string literal).
	sqlOption = regexp.MustCompile(`'((?:[^']|'')*)'(\s*=\s*)'((?:[^']|'')*)'`)
)

// String returns s with every recognised secret replaced by Mask.
func String(s string) string {
	if s == "" {
		return s
	}
	s = sqlOption.ReplaceAllStringFunc(s, func(m string) string {
		p := sqlOption.FindStringSubmatch(m)
		if !SensitiveKey(p[1]) {
			// The value itself may hold a URL with a password or a
			// JAAS configuration: redact inside it.
			inner := redactInner(p[3])
			return "'" + p[1] + "'" + p[2] + "'" + inner + "'"
		}
		return "'" + p[1] + "'" + p[2] + "'" + Mask + "'"
	})
	return redactInner(s)
}

// redactInner hides URL passwords and sensitive key=value pairs.
func redactInner(s string) string {
	s = keyEscapedQuoted.ReplaceAllStringFunc(s, func(m string) string {
		p := keyEscapedQuoted.FindStringSubmatch(m)
		if !SensitiveKey(p[1]) {
			return m
		}
		end := "" // cut short at the end of s
		switch {
		case strings.HasSuffix(m, `\"`):
			end = `\"`
		case strings.HasSuffix(m, `"`):
			end = `"` // cut short: the quoting string's closing quote
		}
		return p[1] + p[2] + `\"` + Mask + end
	})
	s = urlUserInfoLastAt.ReplaceAllString(s, "${1}"+Mask+"@")
	s = urlUserInfo.ReplaceAllString(s, "${1}"+Mask+"@")
	return keyValue.ReplaceAllStringFunc(s, func(m string) string {
		p := keyValue.FindStringSubmatch(m)
		// A value starting \" was handled by keyEscapedQuoted.
		if !SensitiveKey(p[1]) || p[3] == Mask || p[3] == `\` || p[3] == "'"+Mask+"'" || p[3] == `"`+Mask+`"` {
			return m
		}
		v := p[3]
		// Punctuation ending a bare value belongs to the text around it
		// ("password=s3cr3t: refused"): keep it, so that the message reads
		// the same and masking it again changes nothing.
		tail := ""
		if !strings.HasPrefix(v, "'") && !strings.HasPrefix(v, `"`) {
			trimmed := strings.TrimRight(v, ".:!?")
			tail, v = v[len(trimmed):], trimmed
			if v == Mask || v == "" {
				return m
			}
		}
		switch {
		case strings.HasPrefix(v, "'"):
			v = "'" + Mask + "'"
		case strings.HasPrefix(v, `"`):
			v = `"` + Mask + `"`
		default:
			v = Mask
		}
		return p[1] + p[2] + v + tail
	})
}

// Options returns a copy of opts in which the value of every sensitive
// key is Mask and other values are passed through String.
func Options(opts map[string]string) map[string]string {
	out := make(map[string]string, len(opts))
	for k, v := range opts {
		if SensitiveKey(k) {
			out[k] = Mask
		} else {
			out[k] = String(v)
		}
	}
	return out
}
