window.__ran.push('analytics-later');
