//! Bench only: SPIRV-Tools' parse → IR → emit round trip (`spvtools::Optimizer::Run`, no passes,
//! validator off), linked statically through shim.cpp, to compare the rewrite with in one
//! process. See benches/vs_spirv_tools.rs.

#[cfg(not(no_spirv_tools))]
mod ffi {
    extern "C" {
        pub fn spvshim_new() -> *mut std::ffi::c_void;
        pub fn spvshim_free(shim: *mut std::ffi::c_void);
        pub fn spvshim_roundtrip(shim: *mut std::ffi::c_void, words: *const u32, count: usize) -> std::ffi::c_long;
        pub fn spvshim_output(shim: *mut std::ffi::c_void) -> *const u32;
    }
}

/// One `spvtools::Optimizer` with no passes, reused across calls (its output vector too).
pub struct RoundTrip {
    #[cfg(not(no_spirv_tools))]
    shim: *mut std::ffi::c_void,
}

impl RoundTrip {
    /// None when the bench was built without SPIRV-Tools.
    pub fn new() -> Option<Self> {
        #[cfg(not(no_spirv_tools))]
        {
            // SAFETY: the shim allocates an optimizer; freed in Drop.
            Some(RoundTrip { shim: unsafe { ffi::spvshim_new() } })
        }
        #[cfg(no_spirv_tools)]
        {
            None
        }
    }

    /// Parses `words` into SPIRV-Tools' IR and emits it again; the output's word count.
    pub fn run(&mut self, words: &[u32]) -> Option<usize> {
        #[cfg(not(no_spirv_tools))]
        {
            // SAFETY: `words` is valid for `len` words during the call.
            let n = unsafe { ffi::spvshim_roundtrip(self.shim, words.as_ptr(), words.len()) };
            usize::try_from(n).ok()
        }
        #[cfg(no_spirv_tools)]
        {
            let _ = words;
            None
        }
    }

    /// The last output.
    pub fn output(&self, len: usize) -> &[u32] {
        #[cfg(not(no_spirv_tools))]
        {
            // SAFETY: the shim's vector holds `len` words until the next run.
            unsafe { std::slice::from_raw_parts(ffi::spvshim_output(self.shim), len) }
        }
        #[cfg(no_spirv_tools)]
        {
            let _ = len;
            &[]
        }
    }
}

impl Drop for RoundTrip {
    fn drop(&mut self) {
        #[cfg(not(no_spirv_tools))]
        // SAFETY: allocated by spvshim_new, freed once.
        unsafe {
            ffi::spvshim_free(self.shim)
        };
    }
}
