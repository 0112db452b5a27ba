//! Settling many promises from a background thread with one wake-up of the JS thread.
//!
//! napi-rs's `JsDeferred` creates a thread-safe function (a libuv handle) per promise. With
//! group commit the WAL writer settles dozens of appends at once, so that per-promise setup was
//! most of an append's CPU cost. Here one thread-safe function per `Wal` carries all
//! settlements: `settle` queues a result and wakes the JS thread only when the queue was empty;
//! the JS thread then settles everything queued in one go.
//!
//! The thread-safe function is unref'd while no promise is pending, so an idle Wal does not keep
//! Node alive, and ref'd while any is, so Node does not exit before an append resolves.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use napi::{sys, Env, JsValue};

use super::build_js_error;
use crate::error::LoaError;

/// A promise's settle handle, moved to the writer thread and back.
pub struct Deferred(sys::napi_deferred);
// SAFETY: the handle is only used (resolved/rejected) on the JS thread, in `settle_all`; other
// threads only carry it.
unsafe impl Send for Deferred {}

impl Deferred {
  pub fn from_raw(raw: sys::napi_deferred) -> Deferred {
    Deferred(raw)
  }
}

type Settlement = (Deferred, crate::Result<u64>);

struct Shared {
  queue: Mutex<Vec<Settlement>>,
  tsfn: AtomicPtr<sys::napi_threadsafe_function__>,
  pending: AtomicUsize,
  released: AtomicBool,
}

pub struct PromiseBatcher {
  shared: Arc<Shared>,
}

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
  if status == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(napi::Error::from_reason(format!("{what} failed (napi status {status})")))
  }
}

impl PromiseBatcher {
  /// Must run on the JS thread.
  pub fn new(env: &Env) -> napi::Result<PromiseBatcher> {
    let shared = Arc::new(Shared {
      queue: Mutex::new(Vec::new()),
      tsfn: AtomicPtr::new(ptr::null_mut()),
      pending: AtomicUsize::new(0),
      released: AtomicBool::new(false),
    });
    let context = Arc::into_raw(Arc::clone(&shared)) as *mut c_void;
    let name = env.create_string("loa-wal-append")?;
    let mut tsfn = ptr::null_mut();
    // SAFETY: on the JS thread with its env; `context` is a leaked `Arc<Shared>` that `finalize`
    // takes back (or the error path below, when the function was not created).
    let status = unsafe {
      sys::napi_create_threadsafe_function(
        env.raw(),
        ptr::null_mut(),
        ptr::null_mut(),
        name.raw(),
        0,
        1,
        context,
        Some(finalize),
        context,
        Some(settle_all),
        &mut tsfn,
      )
    };
    if let Err(e) = check(status, "napi_create_threadsafe_function") {
      // SAFETY: not created, so `finalize` never runs: this is the only owner of `context`.
      drop(unsafe { Arc::from_raw(context as *const Shared) });
      return Err(e);
    }
    shared.tsfn.store(tsfn, Ordering::Release);
    // SAFETY: on the JS thread; `tsfn` was just created.
    check(unsafe { sys::napi_unref_threadsafe_function(env.raw(), tsfn) }, "napi_unref_threadsafe_function")?;
    Ok(PromiseBatcher { shared })
  }

  /// Another handle to the same channel, for the writer thread's callbacks.
  pub fn clone_handle(&self) -> PromiseBatcher {
    PromiseBatcher { shared: Arc::clone(&self.shared) }
  }

  pub fn is_released(&self) -> bool {
    self.shared.released.load(Ordering::Acquire)
  }

  /// Creates a pending promise. JS thread only, and only while not released.
  pub fn create(&self, env: &Env) -> napi::Result<(Deferred, sys::napi_value)> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the JS thread (this function's contract) with its env.
    check(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) }, "napi_create_promise")?;
    if self.shared.pending.fetch_add(1, Ordering::AcqRel) == 0 {
      let tsfn = self.shared.tsfn.load(Ordering::Acquire);
      // SAFETY: on the JS thread; `tsfn` lives until `release`, which has not run.
      check(unsafe { sys::napi_ref_threadsafe_function(env.raw(), tsfn) }, "napi_ref_threadsafe_function")?;
    }
    Ok((Deferred(deferred), promise))
  }

  /// Queues a settlement; callable from any thread until `release`.
  pub fn settle(&self, deferred: Deferred, result: crate::Result<u64>) {
    let was_empty = {
      let mut queue = self.shared.queue.lock().unwrap_or_else(|p| p.into_inner());
      queue.push((deferred, result));
      queue.len() == 1
    };
    if was_empty {
      let tsfn = self.shared.tsfn.load(Ordering::Acquire);
      // SAFETY: callable from any thread until `release` (this function's contract).
      unsafe {
        sys::napi_call_threadsafe_function(tsfn, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking)
      };
    }
  }

  /// Lets the thread-safe function go once everything queued is delivered. Call after the
  /// writer thread has stopped; idempotent.
  pub fn release(&self) {
    if !self.shared.released.swap(true, Ordering::AcqRel) {
      let tsfn = self.shared.tsfn.load(Ordering::Acquire);
      // SAFETY: released once (the swap above), after the last `settle` (this function's contract).
      unsafe { sys::napi_release_threadsafe_function(tsfn, sys::ThreadsafeFunctionReleaseMode::release) };
    }
  }
}

/// Rejects or resolves a promise right away, on the JS thread.
pub fn settle_now(env: &Env, deferred: Deferred, result: crate::Result<u64>) {
  // SAFETY: on the JS thread (this function's contract); `deferred` is settled once, here.
  unsafe { settle_one(env, deferred, result) }
}

/// # Safety
/// On the JS thread with its env; `deferred` not settled before (it is consumed here).
unsafe fn settle_one(env: &Env, deferred: Deferred, result: crate::Result<u64>) {
  match result {
    Ok(seq) => {
      let mut value = ptr::null_mut();
      // SAFETY: this function's contract.
      if unsafe { sys::napi_create_double(env.raw(), seq as f64, &mut value) } == sys::Status::napi_ok {
        // SAFETY: this function's contract.
        unsafe { sys::napi_resolve_deferred(env.raw(), deferred.0, value) };
      }
    }
    Err(error) => {
      let value = match build_js_error(env, &error) {
        Ok(object) => object.raw(),
        Err(_) => {
          // Environment shutting down: a plain error is the best that can be done.
          let fallback = LoaError::Internal("could not build error object".into());
          match build_js_error(env, &fallback) {
            Ok(object) => object.raw(),
            Err(_) => return,
          }
        }
      };
      // SAFETY: this function's contract.
      unsafe { sys::napi_reject_deferred(env.raw(), deferred.0, value) };
    }
  }
}

/// The thread-safe function's call: on the JS thread (N-API's contract), `context` the `Shared`
/// that `finalize` frees only after the last call.
unsafe extern "C" fn settle_all(
  env: sys::napi_env,
  _js_callback: sys::napi_value,
  context: *mut c_void,
  _data: *mut c_void,
) {
  // SAFETY: see above: `context` outlives every call.
  let shared = unsafe { &*(context as *const Shared) };
  let batch = std::mem::take(&mut *shared.queue.lock().unwrap_or_else(|p| p.into_inner()));
  if env.is_null() || batch.is_empty() {
    return; // teardown: promises can no longer be observed
  }
  let count = batch.len();
  let env_handle = Env::from_raw(env);
  for (deferred, result) in batch {
    // SAFETY: on the JS thread; each queued `deferred` is settled once, here.
    unsafe { settle_one(&env_handle, deferred, result) };
  }
  if shared.pending.fetch_sub(count, Ordering::AcqRel) == count {
    let tsfn = shared.tsfn.load(Ordering::Acquire);
    // SAFETY: on the JS thread; `tsfn` is alive while it calls us.
    unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
  }
}

/// The thread-safe function's finalizer: called once, after its last call.
unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
  // SAFETY: `data` is the `Arc<Shared>` leaked in `new` for the function, taken back once.
  drop(unsafe { Arc::from_raw(data as *const Shared) });
}
