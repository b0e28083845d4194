"""Node-resource plugins, one module each: batchresource, midresource, cpunormalization."""
