package main

import (
	// Connector kinds weir ships; each registers itself in
	// connectors.Default.
	_ "weir/connectors/file"
	_ "weir/connectors/filesink"
	_ "weir/connectors/kafkasink"
	_ "weir/connectors/stdout"
)
