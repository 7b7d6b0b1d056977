//! Integration tests of forq-sandbox against real backends: real namespaces
//! and overlayfs mounts (as root), a real Docker engine, real processes.
//!
//! The same behaviour suite runs against every backend. A backend missing on
//! a developer's machine is skipped with the reason printed; under CI (the
//! `CI` environment variable set) a missing backend fails the test instead.

// A test fails loudly on purpose, and a skip must be said where a developer
// sees it.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

mod attacks;
mod bridge;
mod common;
mod model;
mod native_only;
mod suite;
mod trust;

/// Declares one test per suite function for a backend.
macro_rules! backend_suite {
    ($module:ident, $open:path, [$($test:ident),* $(,)?]) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    if let Some(h) = $open().await {
                        crate::suite::$test(&h).await;
                    }
                }
            )*
        }
    };
}

/// What every backend promises, isolating or not.
macro_rules! every_backend {
    ($module:ident, $open:path, [$($extra:ident),* $(,)?]) => {
        backend_suite!($module, $open, [
            exec_reports_exit_code_signal_and_output,
            stdin_is_fed_and_env_is_set,
            missing_program_is_a_spawn_error,
            output_flood_is_capped_with_dropped_count,
            timeout_kills_the_whole_tree,
            idle_timeout_fires_on_silence,
            fork_sees_parent_and_is_isolated,
            snapshot_is_frozen_point_in_time,
            diff_reports_exactly_the_changes,
            file_ops_refuse_escapes,
            destroy_releases_everything,
            a_link_in_the_tree_is_a_link_in_the_diff_never_a_door,
            reads_never_block_never_pass_their_cap_never_leave,
            $($extra),*
        ]);
    };
}

/// What the isolating backends promise on top.
macro_rules! isolating_backend {
    ($module:ident, $open:path, [$($extra:ident),* $(,)?]) => {
        every_backend!($module, $open, [
            no_network_and_no_host_loopback,
            cannot_write_outside_workspace,
            masked_host_paths_are_invisible,
            fork_bomb_is_stopped_by_pids_limit,
            memory_hog_is_killed_and_reported,
            disk_filler_is_stopped_and_reported,
            payload_has_no_capabilities_no_new_privileges_and_a_filter,
            forq_and_the_command_share_the_workspace,
            a_golden_outlives_its_process_and_gc,
            a_service_is_reached_through_its_network_and_nowhere_else,
            an_install_steps_processes_end_with_it,
            $($extra),*
        ]);
    };
}

isolating_backend!(
    native,
    crate::common::Harness::native,
    [
        host_network_reaches_host_loopback,
        one_exec_can_have_the_host_network,
        installs_reach_only_allowed_hosts_through_the_proxy
    ]
);
isolating_backend!(
    native_userns,
    crate::common::Harness::native_userns,
    [
        host_network_reaches_host_loopback,
        one_exec_can_have_the_host_network,
        installs_reach_only_allowed_hosts_through_the_proxy
    ]
);
isolating_backend!(
    docker,
    crate::common::Harness::docker,
    [
        a_network_override_is_refused_not_ignored,
        installs_reach_only_allowed_hosts_through_the_proxy
    ]
);
// The same engine over TCP: forq cannot enter its containers, so installs
// get a sidecar egress proxy and containers are parked and unparked.
backend_suite!(
    docker_remote,
    crate::common::Harness::docker_remote,
    [
        exec_reports_exit_code_signal_and_output,
        fork_sees_parent_and_is_isolated,
        no_network_and_no_host_loopback,
        a_network_override_is_refused_not_ignored,
        installs_reach_only_allowed_hosts_through_the_proxy,
        the_egress_sidecar_goes_with_its_sandboxes,
        an_install_steps_processes_end_with_it,
    ]
);
every_backend!(host, crate::common::Harness::host, []);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_forq_cannot_enter_refuses_installs_without_a_proxy() {
    crate::suite::an_engine_forq_cannot_enter_refuses_installs_without_a_proxy().await;
}
