//! fi_param_get, fi_getparams, fi_freeparams and the Rust half of
//! fi_param_define (its variadic front is in variadic.c).

use crate::abi::fabric::fi_param;
use crate::abi::prov::fi_provider_head;
use crate::capi::{guard, log::prov_name, nonnull};
use crate::error::{Error, Result};
use crate::param::{self, Param, ParamType, Value};
use libc::{c_char, c_int, c_uint, c_void};
use std::ffi::{CStr, CString};
use std::ptr::null_mut;

unsafe fn str_arg(p: *const c_char) -> String {
    // SAFETY: callers pass a non-NULL NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn provider_of(name: String) -> Option<String> {
    (name != "core").then_some(name)
}

/// Defines a parameter for fi_param_define (help text already formatted).
///
/// # Safety
/// `prov` is NULL or a `struct fi_provider`; `name` and `help` are NULL or
/// strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn oxfabric_param_define(
    prov: *const fi_provider_head,
    name: *const c_char,
    ty: c_uint,
    help: *const c_char,
) -> c_int {
    guard("fi_param_define", || {
        nonnull(name, "fi_param_define", "param_name")?;
        let Some(ty) = ParamType::from_raw(ty) else {
            crate::core_warn!(Core, "fi_param_define: unknown parameter type {ty}");
            return Err(Error::INVAL);
        };
        // SAFETY: per the function contract.
        let (prov, name) = unsafe { (provider_of(prov_name(prov)), str_arg(name)) };
        let help = if help.is_null() {
            String::new()
        } else {
            unsafe { str_arg(help) }
        };
        param::define(Param {
            prov,
            name,
            ty,
            help,
        })?;
        Ok(0)
    })
}

/// Reads a defined parameter into `value`: `char **` for FI_PARAM_STRING
/// (pointing into the environment; do not free), `int *` for FI_PARAM_INT
/// and FI_PARAM_BOOL (0 or 1), `size_t *` for FI_PARAM_SIZE_T.
///
/// Returns 0; -FI_ENOENT if the parameter was never defined; -FI_ENODATA if
/// it is not set; -FI_EINVAL for NULL arguments or a value that does not
/// parse.
///
/// # Safety
/// `provider` is NULL or a `struct fi_provider`; `param_name` a string;
/// `value` writable storage of the parameter's type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_param_get(
    provider: *mut fi_provider_head,
    param_name: *const c_char,
    value: *mut c_void,
) -> c_int {
    guard("fi_param_get", || {
        nonnull(param_name, "fi_param_get", "param_name")?;
        nonnull(value, "fi_param_get", "value")?;
        // SAFETY: per the function contract.
        let (prov, name) = unsafe { (provider_of(prov_name(provider)), str_arg(param_name)) };
        let (p, v) = param::get(prov.as_deref(), &name)?;
        // SAFETY: value is writable storage of the parameter's type.
        unsafe {
            match v {
                Value::String(_) => {
                    let env = CString::new(p.env_name()).map_err(|_| Error::INVAL)?;
                    *(value as *mut *const c_char) = libc::getenv(env.as_ptr());
                }
                Value::Int(i) => *(value as *mut c_int) = i,
                Value::Bool(b) => *(value as *mut c_int) = b as c_int,
                Value::SizeT(s) => *(value as *mut usize) = s,
            }
        }
        Ok(0)
    })
}

unsafe fn dup(s: &str) -> Result<*mut c_char> {
    let c = CString::new(s.replace('\0', "")).map_err(|_| Error::INVAL)?;
    // SAFETY: c is a valid string.
    let p = unsafe { libc::strdup(c.as_ptr()) };
    if p.is_null() {
        Err(Error::NOMEM)
    } else {
        Ok(p)
    }
}

/// Every defined parameter: an array of `*count` entries followed by one
/// zeroed entry, released with fi_freeparams.
///
/// # Safety
/// `params` and `count` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_getparams(params: *mut *mut fi_param, count: *mut c_int) -> c_int {
    guard("fi_getparams", || {
        nonnull(params, "fi_getparams", "params")?;
        nonnull(count, "fi_getparams", "count")?;
        let list = param::all();
        // SAFETY: allocation of list.len()+1 zeroed entries, filled in bounds;
        // on failure fi_freeparams releases what was filled.
        unsafe {
            let arr =
                libc::calloc(list.len() + 1, std::mem::size_of::<fi_param>()) as *mut fi_param;
            if arr.is_null() {
                return Err(Error::NOMEM);
            }
            for (i, (p, v)) in list.iter().enumerate() {
                let e = &mut *arr.add(i);
                let fill = (|| -> Result<()> {
                    e.help_string = dup(&p.help)?;
                    if let Some(v) = v {
                        e.value = dup(v)?;
                    }
                    e.r#type = p.ty as c_uint;
                    e.name = dup(&p.env_name())?;
                    Ok(())
                })();
                if let Err(err) = fill {
                    libc::free(e.help_string as *mut c_void);
                    libc::free(e.value as *mut c_void);
                    e.help_string = null_mut();
                    e.value = null_mut();
                    fi_freeparams(arr);
                    return Err(err);
                }
            }
            *count = list.len() as c_int;
            *params = arr;
        }
        Ok(0)
    })
}

/// Releases an array from fi_getparams. NULL is a no-op.
///
/// # Safety
/// `params` is NULL or an array returned by fi_getparams.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fi_freeparams(params: *mut fi_param) {
    guard("fi_freeparams", || {
        if params.is_null() {
            return Ok(0);
        }
        // SAFETY: the array ends with an entry whose name is NULL.
        unsafe {
            let mut i = 0;
            loop {
                let e = &*params.add(i);
                if e.name.is_null() {
                    break;
                }
                libc::free(e.name as *mut c_void);
                libc::free(e.help_string as *mut c_void);
                libc::free(e.value as *mut c_void);
                i += 1;
            }
            libc::free(params as *mut c_void);
        }
        Ok(0)
    });
}
