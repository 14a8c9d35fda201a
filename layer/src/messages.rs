//! What the layer says, and where it goes.
//!
//! Every message has a kind ([`Id`]: a stable `pMessageIdName` such as `POLYFILL-shader-refused`,
//! a `messageIdNumber` hashed from it, and a message type) and a level. The `log_*!` macros
//! write it to the text log (crate::log: stderr or `log_file`, gated by `log_level`) and hand it
//! to the application's `VK_EXT_debug_utils` messengers and `VK_EXT_debug_report` callbacks of
//! the instance it concerns ([`report`]), as the Khronos validation layer does:
//!
//! - severity follows the level (error/warn/info/debug → ERROR/WARNING/INFO/VERBOSE), the type
//!   the kind (VALIDATION for refused shaders and pipelines, PERFORMANCE for performance
//!   warnings, GENERAL otherwise); each messenger's masks filter;
//! - `pObjects` names the objects in scope: the device, and the shader module or pipeline being
//!   handled (a module the driver never got is named by its hash, `module <hash>`), with the
//!   debug names the application gave them (vkSetDebugUtilsObjectNameEXT);
//! - `duplicate_message_limit` (default 10, 0 = unlimited) per kind and instance: the last one
//!   delivered says that the kind is now suppressed;
//! - messengers chained in `VkInstanceCreateInfo` hear vkCreateInstance and vkDestroyInstance.
//!
//! Which instance and objects a message concerns comes from a per-thread scope: the hooks'
//! handle lookups (crate::dispatch) enter it, `ffi_guard::guard` restores it when a hook
//! returns. The scope is plain `Copy` data in a `const`-initialized thread local (no destructor:
//! the layer may be unloaded while threads live). Messenger state per instance lives in
//! [`REGISTRY`], keyed by the instance's dispatch key.
use crate::log::Level;
use ash::vk;
use dashmap::DashMap;
use once_cell::sync::Lazy;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// The message type a kind is reported with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    General,
    Validation,
    Performance,
}

/// One kind of message.
#[derive(Debug)]
pub struct Id {
    /// `pMessageIdName` without the `POLYFILL-` prefix.
    pub name: &'static str,
    pub kind: Kind,
    /// What it reports (the README's table).
    pub what: &'static str,
    /// `pMessageIdName` with its prefix and a NUL.
    c_name: &'static str,
}

impl Id {
    /// `messageIdNumber`: FNV-1a 32 of `pMessageIdName`, as the validation layer hashes VUIDs.
    pub const fn number(&self) -> i32 {
        let b = self.c_name.as_bytes();
        let mut h: u32 = 0x811c_9dc5;
        let mut i = 0;
        while i + 1 < b.len() {
            h ^= b[i] as u32;
            h = h.wrapping_mul(0x0100_0193);
            i += 1;
        }
        h as i32
    }
    /// `pMessageIdName`.
    pub fn id_name(&self) -> &'static CStr {
        CStr::from_bytes_with_nul(self.c_name.as_bytes()).unwrap_or(c"POLYFILL")
    }
}

macro_rules! ids {
    ($($id:ident = $name:literal, $kind:ident, $what:literal;)*) => {
        $(pub static $id: Id = Id { name: $name, kind: Kind::$kind, what: $what, c_name: concat!("POLYFILL-", $name, "\0") };)*
        /// Every kind, in the README's order.
        pub static ALL: &[&Id] = &[$(&$id),*];
    };
}

/// The kinds of message the layer gives.
pub mod ids {
    use super::{Id, Kind};
    ids! {
        LAYER_ACTIVE = "layer-active", General, "vkCreateInstance: the layer is active, with its version and settings";
        SETTING_INVALID = "setting-invalid", General, "a setting has an unknown key or a bad value; it is ignored";
        SHADER_REFUSED = "shader-refused", Validation, "a module uses an emulated extension in a way the layer cannot lower (or is malformed); its creation fails with VK_ERROR_INVALID_SHADER_NV";
        SHADER_REWRITTEN = "shader-rewritten", General, "a module was rewritten: what was lowered, sizes, time";
        SHADER_PASSED = "shader-passed", General, "a module needs nothing and goes down untouched";
        PIPELINE_REFUSED = "pipeline-refused", Validation, "a pipeline or shader object using the layer's descriptor table has a layout without room for it; its creation fails";
        DEVICE_EMULATION = "device-emulation", General, "per device: what is native, emulated, off or unavailable, and what the device offers the emulations";
        EMULATION_FORCED = "emulation-forced", Performance, "an extension or feature the driver has is emulated anyway (force settings): shaders are rewritten and run slower than natively";
        DEVICE_FEATURES = "device-features", General, "driver features the layer turns on for its lowering and its descriptor table";
        DEVICE_REFUSED = "device-refused", Validation, "vkCreateDevice fails: an emulated bit or a layer structure cannot be removed from the chain, or an enabled emulation cannot work on the device";
        DEVICE_CHAIN = "device-chain", General, "vkCreateDevice: the pNext chain holds structures newer than the layer's registry";
        DESCRIPTOR_TABLE = "descriptor-table", General, "the layer's descriptor table (bindless textures, buffer device addresses): where it is, what it holds";
        NO_NULL_DESCRIPTOR = "no-null-descriptor", General, "the device has no nullDescriptor: free storage-buffer slots of the table hold a layer-owned buffer, free image slots stay unwritten";
        TABLE_FULL = "table-full", General, "a descriptor-table array is full: a handle or address is 0";
        API_MISUSE = "api-misuse", Validation, "a call the layer implements got invalid arguments, or asked for what the emulation does not provide";
        CLIENT_QUIRK = "client-quirk", General, "a known client behaves differently with an emulation on this device: the default changes (README, client quirks)";
        VKD3D_OFFSET_BUFFER = "vkd3d-offset-buffer", General, "vkd3d-proton's raw-access-chain shaders ignore its SSBO offset buffer on this device (raw_access_chains=force)";
        DEFERRED_OPERATION = "deferred-operation", General, "deferred ray-tracing pipeline creation: the layer's copies of the create infos and when they are freed";
        LOADER_INTERFACE = "loader-interface", General, "the loader or the next layer did not give what the layer needs (link info, commands, known handles)";
        INTERNAL_ERROR = "internal-error", General, "a bug in the layer was caught (a panic); the call returns an error";
        DUMP_FAILED = "dump-failed", General, "dump_shaders_dir: a dump could not be written";
        TRACE = "trace", General, "debug-level detail";
    }
}

pub use ids::ALL;

// ---------------------------------------------------------------- scope

/// An object a message concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Object {
    pub ty: vk::ObjectType,
    pub handle: u64,
    /// A shader module's hash (crate::module_rewrite::module_hash), named `module <hash>`
    /// when the module has no debug name (or no handle yet).
    pub module_hash: u64,
}

const MAX_OBJECTS: usize = 3;

#[derive(Debug, Clone, Copy)]
pub struct Scope {
    /// Dispatch key of the instance (0: none).
    instance: usize,
    objects: [Object; MAX_OBJECTS],
    count: u8,
}

const NO_OBJECT: Object = Object { ty: vk::ObjectType::UNKNOWN, handle: 0, module_hash: 0 };

impl Scope {
    const EMPTY: Scope = Scope { instance: 0, objects: [NO_OBJECT; MAX_OBJECTS], count: 0 };
}

thread_local! {
    static SCOPE: Cell<Scope> = const { Cell::new(Scope::EMPTY) };
}

/// The current scope (to restore later).
pub fn save() -> Scope {
    SCOPE.with(|s| s.get())
}

pub fn restore(s: Scope) {
    SCOPE.with(|c| c.set(s));
}

/// Messages now concern the instance with dispatch key `instance` (and `object`, if any).
pub fn enter(instance: usize, object: Option<Object>) {
    let mut s = Scope { instance, ..Scope::EMPTY };
    if let Some(o) = object {
        s.objects[0] = o;
        s.count = 1;
    }
    restore(s);
}

/// Adds `object` to the scope until the guard is dropped.
pub fn with_object(object: Object) -> ObjectGuard {
    let before = save();
    let mut s = before;
    if (s.count as usize) < MAX_OBJECTS {
        s.objects[s.count as usize] = object;
        s.count += 1;
    }
    restore(s);
    ObjectGuard(before)
}

pub struct ObjectGuard(Scope);

impl Drop for ObjectGuard {
    fn drop(&mut self) {
        restore(self.0);
    }
}

// ---------------------------------------------------------------- messengers

/// A `VK_EXT_debug_utils` messenger or a `VK_EXT_debug_report` callback of the application.
#[derive(Clone, Copy)]
pub enum Messenger {
    Utils {
        handle: u64,
        severity: vk::DebugUtilsMessageSeverityFlagsEXT,
        types: vk::DebugUtilsMessageTypeFlagsEXT,
        callback: vk::PFN_vkDebugUtilsMessengerCallbackEXT,
        user_data: *mut c_void,
    },
    Report {
        handle: u64,
        flags: vk::DebugReportFlagsEXT,
        callback: vk::PFN_vkDebugReportCallbackEXT,
        user_data: *mut c_void,
    },
}

// SAFETY: the user data is the application's, handed back to its callback as-is (the spec
// lets callbacks run on any thread).
unsafe impl Send for Messenger {}
unsafe impl Sync for Messenger {}

impl Messenger {
    fn handle(&self) -> u64 {
        match self {
            Messenger::Utils { handle, .. } | Messenger::Report { handle, .. } => *handle,
        }
    }

    /// The messengers chained in a `VkInstanceCreateInfo` (handle 0).
    ///
    /// # Safety
    /// `head` is a valid pNext chain.
    pub unsafe fn chained(head: *const c_void) -> Vec<Messenger> {
        let mut out = Vec::new();
        let mut at = head as *const vk::BaseInStructure;
        while let Some(n) = at.as_ref() {
            match n.s_type {
                vk::StructureType::DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT => {
                    let ci = &*(at as *const vk::DebugUtilsMessengerCreateInfoEXT);
                    out.push(Messenger::utils(0, ci));
                }
                vk::StructureType::DEBUG_REPORT_CALLBACK_CREATE_INFO_EXT => {
                    let ci = &*(at as *const vk::DebugReportCallbackCreateInfoEXT);
                    out.push(Messenger::report(0, ci));
                }
                _ => {}
            }
            at = n.p_next;
        }
        out
    }

    pub fn utils(handle: u64, ci: &vk::DebugUtilsMessengerCreateInfoEXT) -> Messenger {
        Messenger::Utils {
            handle,
            severity: ci.message_severity,
            types: ci.message_type,
            callback: ci.pfn_user_callback,
            user_data: ci.p_user_data,
        }
    }

    pub fn report(handle: u64, ci: &vk::DebugReportCallbackCreateInfoEXT) -> Messenger {
        Messenger::Report { handle, flags: ci.flags, callback: ci.pfn_callback, user_data: ci.p_user_data }
    }
}

/// One instance's messengers and message bookkeeping.
pub struct Channel {
    /// The instance's `log_level`: what reaches its messengers.
    level: Level,
    /// `duplicate_message_limit` (0: unlimited).
    duplicate_limit: u32,
    /// Created with vkCreateDebugUtilsMessengerEXT / vkCreateDebugReportCallbackEXT. Held
    /// (read) while callbacks run, so a destroy waits for calls through the messenger to end.
    messengers: RwLock<Vec<Messenger>>,
    /// Chained in VkInstanceCreateInfo: heard during vkCreateInstance and vkDestroyInstance.
    create_time: Vec<Messenger>,
    create_time_active: AtomicBool,
    /// Messages delivered per kind.
    counts: Mutex<HashMap<&'static str, u32>>,
    /// Things said once per instance.
    said: Mutex<HashSet<&'static str>>,
    /// Debug names (vkSetDebugUtilsObjectNameEXT) by (object type, handle).
    names: DashMap<(i32, u64), CString>,
}

/// Debug names kept per instance at most (then the map starts over: names of destroyed objects
/// are not tracked).
const MAX_NAMES: usize = 1 << 16;

impl Channel {
    pub fn new(level: Level, duplicate_limit: u32, create_time: Vec<Messenger>) -> Channel {
        Channel {
            level,
            duplicate_limit,
            messengers: RwLock::new(Vec::new()),
            create_time_active: AtomicBool::new(!create_time.is_empty()),
            create_time,
            counts: Mutex::new(HashMap::new()),
            said: Mutex::new(HashSet::new()),
            names: DashMap::new(),
        }
    }

    pub fn add(&self, m: Messenger) {
        self.messengers.write().unwrap_or_else(|e| e.into_inner()).push(m);
    }

    /// Removes the messenger with `handle` (waits for calls through it to end).
    pub fn remove(&self, handle: u64) {
        self.messengers.write().unwrap_or_else(|e| e.into_inner()).retain(|m| m.handle() != handle);
    }

    /// Whether the messengers chained at vkCreateInstance listen (during create and destroy).
    pub fn set_create_time_active(&self, on: bool) {
        self.create_time_active.store(on && !self.create_time.is_empty(), Ordering::Release);
    }

    pub fn set_name(&self, ty: vk::ObjectType, handle: u64, name: Option<&CStr>) {
        match name.filter(|n| !n.is_empty()) {
            Some(n) => {
                if self.names.len() >= MAX_NAMES {
                    self.names.clear();
                }
                self.names.insert((ty.as_raw(), handle), n.to_owned());
            }
            None => {
                self.names.remove(&(ty.as_raw(), handle));
            }
        }
    }

    /// Counts one message of `id`: None when it is suppressed, Some(true) for the last one
    /// delivered.
    fn count(&self, id: &Id) -> Option<bool> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(id.name).or_insert(0);
        *n = n.saturating_add(1);
        match self.duplicate_limit {
            0 => Some(false),
            limit if *n > limit => None,
            limit => Some(*n == limit),
        }
    }
}

/// Channels by instance dispatch key (never dropped: no destructors at unload).
static REGISTRY: Lazy<DashMap<usize, Arc<Channel>>> = Lazy::new(DashMap::new);
/// The most verbose level any channel listens to (formatting is skipped below it).
static MAX_LEVEL: AtomicU8 = AtomicU8::new(0);

fn update_max_level() {
    let max = REGISTRY.iter().map(|c| c.level as u8).max().unwrap_or(0);
    MAX_LEVEL.store(max, Ordering::Relaxed);
}

pub fn register(instance: usize, channel: Arc<Channel>) {
    REGISTRY.insert(instance, channel);
    update_max_level();
}

pub fn unregister(instance: usize) -> Option<Arc<Channel>> {
    let c = REGISTRY.remove(&instance).map(|(_, c)| c);
    update_max_level();
    c
}

pub fn channel(instance: usize) -> Option<Arc<Channel>> {
    REGISTRY.get(&instance).map(|c| c.clone())
}

/// Does a message of `level` go anywhere (text log or a channel)?
pub fn wanted(level: Level) -> bool {
    crate::log::enabled(level) || level as u8 <= MAX_LEVEL.load(Ordering::Relaxed)
}

/// True the first time `what` is said for the current scope's instance (always true without
/// an instance in scope).
pub fn first_time(what: &'static str) -> bool {
    let s = save();
    match channel(s.instance) {
        Some(c) => c.said.lock().unwrap_or_else(|e| e.into_inner()).insert(what),
        None => true,
    }
}

/// Writes the message to the text log and reports it to the current instance's messengers.
pub fn emit(level: Level, id: &Id, text: &str) {
    crate::log::log(level, text);
    report(level, id, text);
}

/// Reports a message to the messengers of the instance in scope.
pub fn report(level: Level, id: &Id, text: &str) {
    let scope = save();
    if scope.instance == 0 {
        return;
    }
    let Some(ch) = channel(scope.instance) else { return };
    if level > ch.level {
        return;
    }
    let create_time = ch.create_time_active.load(Ordering::Acquire);
    let messengers = ch.messengers.read().unwrap_or_else(|e| e.into_inner());
    if messengers.is_empty() && !create_time {
        return;
    }
    let Some(last) = ch.count(id) else { return };
    let text = if last {
        format!("{text} (this is the last {} message: duplicate_message_limit {} reached)", id.id_name().to_string_lossy(), ch.duplicate_limit)
    } else {
        text.to_string()
    };
    let message = CString::new(text.replace('\0', " ")).unwrap_or_default();
    let objects = &scope.objects[..scope.count as usize];
    let names: Vec<Option<CString>> = objects.iter().map(|o| object_name(&ch, o)).collect();
    let infos: Vec<vk::DebugUtilsObjectNameInfoEXT> = objects
        .iter()
        .zip(&names)
        .map(|(o, n)| vk::DebugUtilsObjectNameInfoEXT {
            object_type: o.ty,
            object_handle: o.handle,
            p_object_name: n.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
            ..Default::default()
        })
        .collect();
    let all = messengers.iter().chain(if create_time { ch.create_time.iter() } else { [].iter() });
    for m in all {
        // SAFETY: the application's callbacks with the data it registered them with.
        unsafe { deliver(m, level, id, &message, &infos) };
    }
}

/// The name an object is reported with: the application's debug name, else `module <hash>`
/// for a shader module known by its hash.
fn object_name(ch: &Channel, o: &Object) -> Option<CString> {
    if let Some(n) = ch.names.get(&(o.ty.as_raw(), o.handle)).filter(|_| o.handle != 0) {
        return Some(n.clone());
    }
    (o.module_hash != 0).then(|| CString::new(format!("module {:016x}", o.module_hash)).unwrap_or_default())
}

fn severity(level: Level) -> vk::DebugUtilsMessageSeverityFlagsEXT {
    type S = vk::DebugUtilsMessageSeverityFlagsEXT;
    match level {
        Level::Error => S::ERROR,
        Level::Warn => S::WARNING,
        Level::Info => S::INFO,
        Level::Debug => S::VERBOSE,
    }
}

fn message_type(kind: Kind) -> vk::DebugUtilsMessageTypeFlagsEXT {
    type T = vk::DebugUtilsMessageTypeFlagsEXT;
    match kind {
        Kind::General => T::GENERAL,
        Kind::Validation => T::VALIDATION,
        Kind::Performance => T::PERFORMANCE,
    }
}

fn report_flags(level: Level, kind: Kind) -> vk::DebugReportFlagsEXT {
    type F = vk::DebugReportFlagsEXT;
    match level {
        Level::Error => F::ERROR,
        Level::Warn if kind == Kind::Performance => F::PERFORMANCE_WARNING,
        Level::Warn => F::WARNING,
        Level::Info => F::INFORMATION,
        Level::Debug => F::DEBUG,
    }
}

const LAYER_PREFIX: &CStr = c"POLYFILL";

/// # Safety
/// `m` holds the application's callback and user data.
unsafe fn deliver(m: &Messenger, level: Level, id: &Id, message: &CStr, objects: &[vk::DebugUtilsObjectNameInfoEXT]) {
    match *m {
        Messenger::Utils { severity: mask, types, callback: Some(cb), user_data, .. } => {
            let (sev, ty) = (severity(level), message_type(id.kind));
            if !mask.contains(sev) || !types.contains(ty) {
                return;
            }
            let data = vk::DebugUtilsMessengerCallbackDataEXT {
                p_message_id_name: id.id_name().as_ptr(),
                message_id_number: id.number(),
                p_message: message.as_ptr(),
                object_count: objects.len() as u32,
                p_objects: if objects.is_empty() { std::ptr::null() } else { objects.as_ptr() },
                ..Default::default()
            };
            cb(sev, ty, &data, user_data);
        }
        Messenger::Report { flags, callback: Some(cb), user_data, .. } => {
            let f = report_flags(level, id.kind);
            if !flags.contains(f) {
                return;
            }
            // VkDebugReportObjectTypeEXT equals VkObjectType for the core object types.
            let (ty, obj) = objects.first().map_or((0, 0), |o| (o.object_type.as_raw(), o.object_handle));
            cb(f, vk::DebugReportObjectTypeEXT::from_raw(ty), obj, 0, id.number(), LAYER_PREFIX.as_ptr(), message.as_ptr(), user_data);
        }
        _ => {}
    }
}

#[macro_export]
macro_rules! log_error { ($id:ident, $($a:tt)*) => { $crate::messages::emit($crate::log::Level::Error, &$crate::messages::ids::$id, &format!($($a)*)) } }
#[macro_export]
macro_rules! log_warn { ($id:ident, $($a:tt)*) => { $crate::messages::emit($crate::log::Level::Warn, &$crate::messages::ids::$id, &format!($($a)*)) } }
#[macro_export]
macro_rules! log_info { ($id:ident, $($a:tt)*) => { if $crate::messages::wanted($crate::log::Level::Info) { $crate::messages::emit($crate::log::Level::Info, &$crate::messages::ids::$id, &format!($($a)*)) } } }
#[macro_export]
macro_rules! log_debug { ($id:ident, $($a:tt)*) => { if $crate::messages::wanted($crate::log::Level::Debug) { $crate::messages::emit($crate::log::Level::Debug, &$crate::messages::ids::$id, &format!($($a)*)) } } }

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(ids::SHADER_REFUSED.id_name(), c"POLYFILL-shader-refused");
        // FNV-1a 32 of "POLYFILL-shader-refused", computed independently.
        let mut h: u32 = 0x811c_9dc5;
        for b in b"POLYFILL-shader-refused" {
            h = (h ^ *b as u32).wrapping_mul(0x0100_0193);
        }
        assert_eq!(ids::SHADER_REFUSED.number(), h as i32);
        let numbers: HashSet<i32> = ALL.iter().map(|i| i.number()).collect();
        let names: HashSet<&str> = ALL.iter().map(|i| i.name).collect();
        assert_eq!((numbers.len(), names.len()), (ALL.len(), ALL.len()));
    }

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static LAST: Mutex<Option<(String, i32, String, usize)>> = Mutex::new(None);

    unsafe extern "system" fn cb(
        _sev: vk::DebugUtilsMessageSeverityFlagsEXT,
        _ty: vk::DebugUtilsMessageTypeFlagsEXT,
        data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
        _user: *mut c_void,
    ) -> vk::Bool32 {
        let d = &*data;
        let name = CStr::from_ptr(d.p_message_id_name).to_string_lossy().into_owned();
        let msg = CStr::from_ptr(d.p_message).to_string_lossy().into_owned();
        CALLS.fetch_add(1, Ordering::SeqCst);
        *LAST.lock().unwrap() = Some((name, d.message_id_number, msg, d.object_count as usize));
        vk::FALSE
    }

    #[test]
    fn masks_limits_and_scope() {
        let ch = Arc::new(Channel::new(Level::Info, 2, Vec::new()));
        let ci = vk::DebugUtilsMessengerCreateInfoEXT {
            message_severity: vk::DebugUtilsMessageSeverityFlagsEXT::ERROR | vk::DebugUtilsMessageSeverityFlagsEXT::INFO,
            message_type: vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION | vk::DebugUtilsMessageTypeFlagsEXT::GENERAL,
            pfn_user_callback: Some(cb),
            ..Default::default()
        };
        ch.add(Messenger::utils(7, &ci));
        register(0x5150, ch.clone());
        let before = save();
        enter(0x5150, Some(Object { ty: vk::ObjectType::DEVICE, handle: 0x99, module_hash: 0 }));
        let _m = with_object(Object { ty: vk::ObjectType::SHADER_MODULE, handle: 0, module_hash: 0xabc });
        report(Level::Error, &ids::SHADER_REFUSED, "bad");
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        let last = LAST.lock().unwrap().clone().unwrap();
        assert_eq!((last.0.as_str(), last.1, last.3), ("POLYFILL-shader-refused", ids::SHADER_REFUSED.number(), 2));
        report(Level::Warn, &ids::EMULATION_FORCED, "performance: masked out");
        report(Level::Debug, &ids::TRACE, "below the channel's level");
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        report(Level::Error, &ids::SHADER_REFUSED, "second");
        assert!(LAST.lock().unwrap().clone().unwrap().2.contains("duplicate_message_limit 2"), "the last one says so");
        report(Level::Error, &ids::SHADER_REFUSED, "third: suppressed");
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        ch.remove(7);
        report(Level::Error, &ids::API_MISUSE, "no messenger left");
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        assert!(first_time("x") && !first_time("x"));
        drop(_m);
        restore(before);
        unregister(0x5150);
    }
}
