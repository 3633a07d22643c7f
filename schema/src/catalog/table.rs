//! Generated from the exporter's descriptors by the exporter's `schema_catalog` test
//! (`REVEAL_BLESS=1 cargo nextest run -p reveal-exporter --test schema_catalog`);
//! do not edit by hand.

use super::Metric;

pub(super) static METRICS: &[Metric] = &[
    Metric {
        name: "reveal_cpu_time_seconds_total",
        labels: &["cpu", "mode"],
    },
    Metric {
        name: "reveal_cpu_busy_seconds_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_guest_time_seconds_total",
        labels: &["cpu", "mode"],
    },
    Metric {
        name: "reveal_cpu_context_switches_total",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_forks_total",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_procs_running",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_procs_blocked",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_boot_time_seconds",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_interrupts_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_irq_line_interrupts_total",
        labels: &["irq", "device"],
    },
    Metric {
        name: "reveal_cpu_irq_lines",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_irq_lines_skipped_total",
        labels: &[],
    },
    Metric {
        name: "reveal_cpu_softirqs_total",
        labels: &["cpu", "type"],
    },
    Metric {
        name: "reveal_cpu_frequency_hertz",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_frequency_min_hertz",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_frequency_max_hertz",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_frequency_hardware_max_hertz",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_idle_state_time_seconds_total",
        labels: &["cpu", "state"],
    },
    Metric {
        name: "reveal_cpu_idle_state_entries_total",
        labels: &["cpu", "state"],
    },
    Metric {
        name: "reveal_cpu_rapl_energy_joules_total",
        labels: &["zone"],
    },
    Metric {
        name: "reveal_cpu_temperature_celsius",
        labels: &["chip", "sensor", "label"],
    },
    Metric {
        name: "reveal_memory_temperature_celsius",
        labels: &["chip", "sensor", "label"],
    },
    Metric {
        name: "reveal_storage_temperature_celsius",
        labels: &["chip", "sensor", "label"],
    },
    Metric {
        name: "reveal_network_temperature_celsius",
        labels: &["chip", "sensor", "label"],
    },
    Metric {
        name: "reveal_gpu_hwmon_temperature_celsius",
        labels: &["chip", "sensor", "label"],
    },
    Metric {
        name: "reveal_memory_mem_total_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_mem_free_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_mem_available_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_buffers_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_cached_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_swap_cached_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_active_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_inactive_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_active_anon_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_inactive_anon_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_active_file_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_inactive_file_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_unevictable_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_mlocked_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_high_total_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_high_free_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_low_total_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_low_free_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_mmap_copy_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_swap_total_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_swap_free_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_zswap_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_zswapped_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_dirty_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_writeback_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_anon_pages_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_mapped_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_shmem_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_kernel_reclaimable_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_slab_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_slab_reclaimable_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_slab_unreclaimable_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_kernel_stack_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_shadow_call_stack_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_page_tables_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_secondary_page_tables_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_nfs_unstable_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_bounce_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_writeback_tmp_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_commit_limit_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_committed_as_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_vmalloc_total_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_vmalloc_used_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_vmalloc_chunk_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_percpu_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_early_memtest_bad_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_hardware_corrupted_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_anon_huge_pages_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_shmem_huge_pages_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_shmem_pmd_mapped_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_file_huge_pages_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_file_pmd_mapped_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_cma_total_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_cma_free_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_unaccepted_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_balloon_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_quicklists_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_hugetlb_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_direct_map_4k_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_direct_map_2m_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_direct_map_4m_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_direct_map_1g_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_hugepages",
        labels: &["state"],
    },
    Metric {
        name: "reveal_memory_hugepage_size_bytes",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_hugepages_pool",
        labels: &["size", "state"],
    },
    Metric {
        name: "reveal_memory_numa_hugepages",
        labels: &["node", "size", "state"],
    },
    Metric {
        name: "reveal_memory_vmstat_events_total",
        labels: &["event"],
    },
    Metric {
        name: "reveal_cpu_pressure_stalled_seconds_total",
        labels: &["kind"],
    },
    Metric {
        name: "reveal_cpu_irq_pressure_stalled_seconds_total",
        labels: &["kind"],
    },
    Metric {
        name: "reveal_memory_pressure_stalled_seconds_total",
        labels: &["kind"],
    },
    Metric {
        name: "reveal_storage_pressure_stalled_seconds_total",
        labels: &["kind"],
    },
    Metric {
        name: "reveal_cpu_cgroup_usage_seconds_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_cpu_cgroup_time_seconds_total",
        labels: &["cgroup", "pod_uid", "mode"],
    },
    Metric {
        name: "reveal_cpu_cgroup_throttled_periods_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_cpu_cgroup_throttled_seconds_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_cpu_cgroup_pressure_stalled_seconds_total",
        labels: &["cgroup", "pod_uid", "kind"],
    },
    Metric {
        name: "reveal_memory_cgroup_usage_bytes",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_memory_cgroup_events_total",
        labels: &["cgroup", "pod_uid", "event"],
    },
    Metric {
        name: "reveal_memory_cgroup_pressure_stalled_seconds_total",
        labels: &["cgroup", "pod_uid", "kind"],
    },
    Metric {
        name: "reveal_storage_cgroup_read_bytes_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_storage_cgroup_written_bytes_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_storage_cgroup_reads_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_storage_cgroup_writes_total",
        labels: &["cgroup", "pod_uid"],
    },
    Metric {
        name: "reveal_storage_cgroup_pressure_stalled_seconds_total",
        labels: &["cgroup", "pod_uid", "kind"],
    },
    Metric {
        name: "reveal_cpu_cgroups_folded",
        labels: &[],
    },
    Metric {
        name: "reveal_memory_numa_events_total",
        labels: &["node", "event"],
    },
    Metric {
        name: "reveal_memory_numa_mem_total_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_mem_free_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_mem_used_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_swap_cached_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_active_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_inactive_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_active_anon_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_inactive_anon_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_active_file_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_inactive_file_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_unevictable_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_mlocked_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_dirty_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_writeback_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_file_pages_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_mapped_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_anon_pages_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_shmem_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_kernel_stack_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_page_tables_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_secondary_page_tables_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_writeback_tmp_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_kernel_reclaimable_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_slab_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_slab_reclaimable_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_slab_unreclaimable_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_anon_huge_pages_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_shmem_huge_pages_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_file_huge_pages_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_unaccepted_bytes",
        labels: &["node"],
    },
    Metric {
        name: "reveal_memory_numa_meminfo_hugepages",
        labels: &["node", "state"],
    },
    Metric {
        name: "reveal_storage_reads_completed_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_reads_merged_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_read_bytes_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_read_time_seconds_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_writes_completed_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_writes_merged_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_written_bytes_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_write_time_seconds_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_io_in_progress",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_io_time_seconds_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_io_weighted_time_seconds_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_discards_completed_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_discards_merged_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_discarded_bytes_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_discard_time_seconds_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_flushes_completed_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_storage_flush_time_seconds_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_bytes_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_packets_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_errors_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_drops_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_fifo_errors_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_frame_errors_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_compressed_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_receive_multicast_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_bytes_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_packets_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_errors_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_drops_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_fifo_errors_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_collisions_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_carrier_errors_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_transmit_compressed_total",
        labels: &["device"],
    },
    Metric {
        name: "reveal_network_protocol_events_total",
        labels: &["protocol", "field"],
    },
    Metric {
        name: "reveal_network_protocol_value",
        labels: &["protocol", "field"],
    },
    Metric {
        name: "reveal_network_sockets_used",
        labels: &[],
    },
    Metric {
        name: "reveal_network_sockets",
        labels: &["protocol", "state"],
    },
    Metric {
        name: "reveal_network_socket_memory_bytes",
        labels: &["protocol"],
    },
    Metric {
        name: "reveal_network_infiniband_receive_bytes_total",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_infiniband_transmit_bytes_total",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_infiniband_receive_packets_total",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_infiniband_transmit_packets_total",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_infiniband_port_events_total",
        labels: &["device", "port", "counter"],
    },
    Metric {
        name: "reveal_network_infiniband_hw_events_total",
        labels: &["device", "port", "counter"],
    },
    Metric {
        name: "reveal_network_infiniband_port_state",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_infiniband_port_physical_state",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_infiniband_port_rate_bytes_per_second",
        labels: &["device", "port"],
    },
    Metric {
        name: "reveal_network_tcp_connections",
        labels: &["state"],
    },
    Metric {
        name: "reveal_cpu_instructions_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_cycles_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_cache_references_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_cache_misses_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_branch_instructions_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_branch_misses_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_stalled_cycles_frontend_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_stalled_cycles_backend_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_task_clock_seconds_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_perf_context_switches_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_migrations_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_memory_page_faults_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_perf_running_ratio",
        labels: &["cpu", "group"],
    },
    Metric {
        name: "reveal_cpu_perf_event_total",
        labels: &["cpu", "event"],
    },
    Metric {
        name: "reveal_gpu_perf_event_total",
        labels: &["cpu", "event"],
    },
    Metric {
        name: "reveal_memory_perf_event_total",
        labels: &["cpu", "event"],
    },
    Metric {
        name: "reveal_network_perf_event_total",
        labels: &["cpu", "event"],
    },
    Metric {
        name: "reveal_storage_perf_event_total",
        labels: &["cpu", "event"],
    },
    Metric {
        name: "reveal_cpu_aperf_cycles_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_mperf_cycles_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_tsc_cycles_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_smi_total",
        labels: &["cpu"],
    },
    Metric {
        name: "reveal_cpu_cstate_residency_cycles_total",
        labels: &["cpu", "scope", "state"],
    },
    Metric {
        name: "reveal_cpu_tsc_frequency_hertz",
        labels: &[],
    },
    Metric {
        name: "reveal_gpu_utilization_ratio",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_memory_utilization_ratio",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_memory_used_bytes",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_memory_total_bytes",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_power_watts",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_energy_joules_total",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_temperature_celsius",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_clock_hertz",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "clock"],
    },
    Metric {
        name: "reveal_gpu_clock_max_hertz",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "clock"],
    },
    Metric {
        name: "reveal_gpu_pcie_link_generation",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_pcie_link_generation_max",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_pcie_link_width",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_pcie_link_width_max",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_pcie_throughput_bytes_per_second",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "direction"],
    },
    Metric {
        name: "reveal_gpu_ecc_errors_total",
        labels: &[
            "gpu",
            "uuid",
            "model",
            "pci_bus_id",
            "type",
            "counter",
            "location",
        ],
    },
    Metric {
        name: "reveal_gpu_retired_pages_total",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "cause"],
    },
    Metric {
        name: "reveal_gpu_throttle_reason",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "reason"],
    },
    Metric {
        name: "reveal_gpu_encoder_utilization_ratio",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_decoder_utilization_ratio",
        labels: &["gpu", "uuid", "model", "pci_bus_id"],
    },
    Metric {
        name: "reveal_gpu_nvlink_active",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "link"],
    },
    Metric {
        name: "reveal_gpu_nvlink_errors_total",
        labels: &["gpu", "uuid", "model", "pci_bus_id", "link", "counter"],
    },
    Metric {
        name: "reveal_exporter_collector_success",
        labels: &["collector"],
    },
    Metric {
        name: "reveal_exporter_collector_duration_seconds",
        labels: &["collector"],
    },
    Metric {
        name: "reveal_exporter_build_info",
        labels: &["version", "revision", "branch", "rustversion"],
    },
    Metric {
        name: "process_cpu_seconds_total",
        labels: &[],
    },
    Metric {
        name: "process_resident_memory_bytes",
        labels: &[],
    },
    Metric {
        name: "process_virtual_memory_bytes",
        labels: &[],
    },
    Metric {
        name: "process_start_time_seconds",
        labels: &[],
    },
    Metric {
        name: "process_open_fds",
        labels: &[],
    },
    Metric {
        name: "process_max_fds",
        labels: &[],
    },
    Metric {
        name: "process_threads",
        labels: &[],
    },
];
