package tlsconf

import "weir/internal/pemfile"

// The PEM stores are read by internal/pemfile, shared with weir's clients.
var (
	parseKeyStore   = pemfile.KeyStore
	parseTrustStore = pemfile.TrustStore
)
