window.__ran.push('marketing');
