//! VK_LAYER_POLYFILL_extensions
